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
