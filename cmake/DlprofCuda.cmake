# Optional GPU support: the CUPTI plugin (lib/cupti), the unit tests that
# need CUPTI's headers, and the CUDA test program (tests/gpu).
#
# Everything here is optional. Without a CUDA toolkit (or with
# -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON or -DDLPROF_WITH_CUDA=OFF) the
# project still builds and tests; libdlprof_cupti.so is simply not built.
#
# Sets:
#   DLPROF_HAVE_CUPTI      ON when the plugin is built
#   DLPROF_CUPTI_LIBRARY   libcupti, linked by the plugin only
#   DLPROF_CUPTI_LIB_DIR   its directory (the plugin's RUNPATH)
#   dlprof_cupti_headers   INTERFACE target: CUPTI and CUDA include dirs,
#                          for code that reads CUPTI structs without linking
option(DLPROF_WITH_CUDA "Build the CUPTI plugin when a CUDA toolkit with CUPTI is found" ON)

set(DLPROF_HAVE_CUPTI OFF)
# The record structs lib/cupti/cupti_records.h names: CUDA 13.x.
set(DLPROF_CUPTI_MIN_VERSION 130000)
set(DLPROF_CUPTI_MAX_VERSION 139999)

if(DLPROF_WITH_CUDA)
  find_package(CUDAToolkit QUIET)
endif()

if(CUDAToolkit_FOUND)
  # CUPTI lives in the toolkit's include/lib, or in extras/CUPTI in older layouts.
  set(_dlprof_cuda_roots ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
  set(_dlprof_cupti_inc_hints ${CUDAToolkit_INCLUDE_DIRS})
  set(_dlprof_cupti_lib_hints ${CUDAToolkit_LIBRARY_DIR})
  foreach(root ${_dlprof_cuda_roots})
    list(APPEND _dlprof_cupti_inc_hints ${root}/extras/CUPTI/include)
    list(APPEND _dlprof_cupti_lib_hints ${root}/extras/CUPTI/lib64 ${root}/lib64 ${root}/lib)
  endforeach()
  find_path(DLPROF_CUPTI_INCLUDE_DIR cupti.h HINTS ${_dlprof_cupti_inc_hints} NO_DEFAULT_PATH)
  find_library(DLPROF_CUPTI_LIBRARY cupti HINTS ${_dlprof_cupti_lib_hints} NO_DEFAULT_PATH)

  set(_dlprof_cupti_version "")
  if(DLPROF_CUPTI_INCLUDE_DIR AND EXISTS ${DLPROF_CUPTI_INCLUDE_DIR}/cupti_version.h)
    file(STRINGS ${DLPROF_CUPTI_INCLUDE_DIR}/cupti_version.h _dlprof_line
         REGEX "^#define CUPTI_API_VERSION [0-9]+")
    string(REGEX REPLACE "^#define CUPTI_API_VERSION ([0-9]+).*" "\\1" _dlprof_cupti_version
           "${_dlprof_line}")
  endif()

  if(NOT DLPROF_CUPTI_INCLUDE_DIR OR NOT DLPROF_CUPTI_LIBRARY)
    message(STATUS "dlprof: CUDA ${CUDAToolkit_VERSION} has no CUPTI; the CUPTI plugin is not built")
  elseif(_dlprof_cupti_version LESS DLPROF_CUPTI_MIN_VERSION OR
         _dlprof_cupti_version GREATER DLPROF_CUPTI_MAX_VERSION)
    message(STATUS "dlprof: CUPTI API version ${_dlprof_cupti_version} is not supported "
                   "(CUDA 13.x is); the CUPTI plugin is not built")
  else()
    set(DLPROF_HAVE_CUPTI ON)
    get_filename_component(DLPROF_CUPTI_LIB_DIR ${DLPROF_CUPTI_LIBRARY} DIRECTORY)
    add_library(dlprof_cupti_headers INTERFACE)
    # SYSTEM: CUDA's headers are not ours to warn about.
    target_include_directories(dlprof_cupti_headers SYSTEM INTERFACE
      ${DLPROF_CUPTI_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
    message(STATUS "dlprof: CUPTI plugin: CUDA ${CUDAToolkit_VERSION}, "
                   "CUPTI API ${_dlprof_cupti_version}, ${DLPROF_CUPTI_LIBRARY}")
  endif()
else()
  message(STATUS "dlprof: no CUDA toolkit; the CUPTI plugin is not built")
endif()
