# Sanitizer and fuzzing builds (issue 6; scripts/sanitize.sh, scripts/fuzz.sh).
#
#   -DDLPROF_SANITIZE=address   AddressSanitizer + UndefinedBehaviorSanitizer
#   -DDLPROF_SANITIZE=thread    ThreadSanitizer
#   -DDLPROF_FUZZ=ON            with clang: coverage for libFuzzer, plus ASan
#                               and UBSan, and the fuzzer binary in tests/fuzz
#
# Everything is instrumented: the preload library, the tools, the unit tests
# and the test programs. A test program that is not instrumented (python, a
# shell) still needs the sanitizer runtime first in LD_PRELOAD, ahead of
# libdlprof.so: scripts/sanitize.sh sets DLPROF_TEST_PRELOAD_PREFIX for that.
set(DLPROF_SANITIZE "" CACHE STRING "Sanitizer build: address (ASan+UBSan) or thread (TSan)")
set_property(CACHE DLPROF_SANITIZE PROPERTY STRINGS "" address thread)
option(DLPROF_FUZZ "Build the libFuzzer target of the trace decoder (clang only)" OFF)

set(DLPROF_SANITIZE_FLAGS)
if(DLPROF_SANITIZE STREQUAL "address")
  list(APPEND DLPROF_SANITIZE_FLAGS -fsanitize=address,undefined)
elseif(DLPROF_SANITIZE STREQUAL "thread")
  list(APPEND DLPROF_SANITIZE_FLAGS -fsanitize=thread)
elseif(NOT DLPROF_SANITIZE STREQUAL "")
  message(FATAL_ERROR "DLPROF_SANITIZE must be address or thread, not '${DLPROF_SANITIZE}'")
endif()
if(DLPROF_FUZZ AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  if(NOT DLPROF_SANITIZE_FLAGS)
    list(APPEND DLPROF_SANITIZE_FLAGS -fsanitize=address,undefined)
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
if(DLPROF_SANITIZE_FLAGS)
  add_compile_options(${DLPROF_SANITIZE_FLAGS} -fno-omit-frame-pointer -g)
  add_link_options(${DLPROF_SANITIZE_FLAGS})
  message(STATUS "dlprof: sanitizer build: ${DLPROF_SANITIZE_FLAGS}")
endif()

# ThreadSanitizer's runtime calls sigaction, mmap, open... by name while it
# sets itself up, and libdlprof.so's wrappers answer: code it has instrumented
# must not run before that. So under TSan the interposition layer (and the
# dlsym lookup of real symbols it calls first) is left uninstrumented; the
# runtime's concurrent parts -- rings, registry, flusher, trace sink, process
# events -- and the tools and unit tests stay instrumented.
function(dlprof_sanitize_exclude_wrappers)
  if(DLPROF_SANITIZE STREQUAL "thread" AND TARGET dlprof_intercept)
    target_compile_options(dlprof_intercept PRIVATE -fno-sanitize=thread)
    set_source_files_properties(${PROJECT_SOURCE_DIR}/lib/core/real_symbol.cc
      DIRECTORY ${PROJECT_SOURCE_DIR}/lib
      PROPERTIES COMPILE_OPTIONS -fno-sanitize=thread)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL dlprof_sanitize_exclude_wrappers)
