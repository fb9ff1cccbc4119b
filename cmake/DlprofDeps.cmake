# Finds the Debian packages dlprof builds against. Nothing is downloaded.
find_package(Threads REQUIRED)

# zstd: link the static archive into libdlprof.so with its symbols hidden,
# because PyTorch and others bring their own libzstd; fall back to the shared
# library when the archive cannot go into a shared object.
find_path(ZSTD_INCLUDE_DIR zstd.h REQUIRED)
find_library(ZSTD_STATIC_LIBRARY NAMES libzstd.a)
find_library(ZSTD_SHARED_LIBRARY NAMES zstd REQUIRED)
if(ZSTD_STATIC_LIBRARY)
  set(DLPROF_ZSTD_FOR_RUNTIME ${ZSTD_STATIC_LIBRARY})
else()
  set(DLPROF_ZSTD_FOR_RUNTIME ${ZSTD_SHARED_LIBRARY})
endif()
message(STATUS "dlprof: zstd for the runtime: ${DLPROF_ZSTD_FOR_RUNTIME}")

add_library(dlprof_zstd INTERFACE)
target_include_directories(dlprof_zstd INTERFACE ${ZSTD_INCLUDE_DIR})
target_link_libraries(dlprof_zstd INTERFACE ${DLPROF_ZSTD_FOR_RUNTIME})

include(DlprofCuda)
include(DlprofSanitize)

# MPI, for the integration tests only (libdlprof.so links no MPI). The tests
# run under each MPI family found: Open MPI and MPICH (the family of Cray
# MPICH, Intel MPI and MVAPICH). Debian installs both side by side, each
# compiler wrapper and launcher under its family's suffix (the plain mpicc is
# whichever the `mpi` alternative names); another install can name its own
# with -DDLPROF_MPICC_<FAMILY>=... -DDLPROF_MPIEXEC_<FAMILY>=....
set(DLPROF_MPI_FAMILIES)
foreach(family openmpi mpich)
  string(TOUPPER ${family} upper)
  if(family STREQUAL "openmpi")
    set(launchers mpirun.openmpi mpiexec.openmpi)
  else()
    set(launchers mpiexec.mpich mpirun.mpich mpiexec.hydra)
  endif()
  find_program(DLPROF_MPICC_${upper} NAMES mpicc.${family}
               DOC "C compiler wrapper of ${family} (MPI integration tests)")
  find_program(DLPROF_MPIEXEC_${upper} NAMES ${launchers}
               DOC "Launcher of ${family} (MPI integration tests)")
  if(DLPROF_MPICC_${upper} AND DLPROF_MPIEXEC_${upper}
     AND EXISTS "${DLPROF_MPICC_${upper}}" AND EXISTS "${DLPROF_MPIEXEC_${upper}}")
    list(APPEND DLPROF_MPI_FAMILIES ${family})
    message(STATUS "dlprof: MPI tests under ${family}: "
                   "${DLPROF_MPICC_${upper}}, ${DLPROF_MPIEXEC_${upper}}")
  else()
    message(STATUS "dlprof: ${family} not found (mpicc.${family} and its launcher): "
                   "its MPI tests are not registered")
  endif()
endforeach()
