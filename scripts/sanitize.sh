#!/usr/bin/env bash
# Builds dlprof with sanitizers and runs the unit, integration and
# reliability tests under them (issue 6).
#
#   scripts/sanitize.sh [address|thread|all] [CTEST_ARGS...]
#
#   address  build-asan: -fsanitize=address,undefined (ASan + UBSan)
#   thread   build-tsan: -fsanitize=thread (TSan)
#   all      both, one after the other (the default)
#
# Everything is instrumented (cmake -DDLPROF_SANITIZE=..., see
# cmake/DlprofSanitize.cmake): libdlprof.so, dlprof-dump, the unit tests and
# the test programs. Programs run under LD_PRELOAD get the sanitizer runtime
# first -- LD_PRELOAD="$(gcc -print-file-name=libasan.so) .../libdlprof.so" --
# through DLPROF_TEST_PRELOAD_PREFIX, which the tests' harness puts in front
# of the library (tests/dltest, dltest.PRELOAD_PREFIX). A sanitizer report
# goes to the program's stderr (no
# log_path: the runtime would create its directory with mkdir() before it has
# set itself up, and that mkdir is libdlprof.so's instrumented wrapper); a
# test fails when its program exits with the sanitizer's status or prints
# something unexpected, and this script counts the reports in the ctest
# output it keeps in BUILD/sanitize-ctest.log.
#
# Environment: DLPROF_SANITIZE_JOBS (parallel build jobs, default nproc),
# DLPROF_SANITIZE_NO_BUILD=1 (reuse the build as it is).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
which="${1:-all}"
[ $# -gt 0 ] && shift
JOBS="${DLPROF_SANITIZE_JOBS:-$(nproc)}"
status=0

run_kind() {
  local kind="$1" dir runtime logs
  shift
  case "$kind" in
    address) dir="$ROOT/build-asan"; runtime="$(gcc -print-file-name=libasan.so)" ;;
    thread) dir="$ROOT/build-tsan"; runtime="$(gcc -print-file-name=libtsan.so)" ;;
    *) echo "sanitize.sh: unknown kind '$kind' (address, thread or all)" >&2; return 2 ;;
  esac
  if [ "${DLPROF_SANITIZE_NO_BUILD:-0}" != 1 ]; then
    mkdir -p "$dir"
    cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDLPROF_SANITIZE="$kind" \
      -DDLPROF_BUILD_BENCH=OFF > "$dir/sanitize-configure.log" 2>&1 \
      || { cat "$dir/sanitize-configure.log"; return 1; }
    cmake --build "$dir" -j "$JOBS" > "$dir/sanitize-build.log" 2>&1 \
      || { tail -50 "$dir/sanitize-build.log"; return 1; }
  fi
  local log="$dir/sanitize-ctest.log"
  : > "$log"

  export DLPROF_TEST_PRELOAD_PREFIX="$runtime"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  # The tracer forks and starts its flusher thread in the child of a
  # multi-threaded parent by design: TSan must let the child live.
  export TSAN_OPTIONS="die_after_fork=0:second_deadlock_stack=1"
  local rc=0
  echo "== $kind: unit tests (leak checking on)"
  ASAN_OPTIONS="detect_leaks=1" ctest --test-dir "$dir" -L unit --output-on-failure "$@" \
    2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  # Traced programs and the tracer itself keep memory to the end on purpose
  # (the runtime is never destroyed: wrappers run during static destruction).
  echo "== $kind: integration and reliability tests"
  # (The annotations and GPU suites carry the integration label too; they
  # are left out.)
  # Tests that fail under a sanitizer for reasons of the sanitizer alone
  # (docs/RELIABILITY_TESTS.md, "Sanitizers") are left out, and said so:
  #   address: stdio -- ASan's fprintf interceptor calls vfprintf, so the
  #            trace names the call vfprintf;
  #   thread:  programs that fork from a threaded process (TSan reports "dup
  #            thread" in the child and exits 66) or whose calls TSan's
  #            interceptors rename (reliability.fds skips the close_fds.c
  #            cases of the former integration.fds itself).
  local artefacts
  case "$kind" in
    address) artefacts='^integration\.(stdio)$' ;;
    thread) artefacts='^integration\.(basic_io|fork_exec|multiprocessing|dataloader|stdio|chrome|example)$' ;;
  esac
  echo "== $kind: left out as sanitizer artefacts: $artefacts"
  ASAN_OPTIONS="detect_leaks=0" ctest --test-dir "$dir" -L '^(integration|reliability)$' \
    -LE '^(annotations|gpu)$' -E "$artefacts" --output-on-failure "$@" 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  local reports
  reports=$(grep -cE "ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|WARNING: ThreadSanitizer|ERROR: ThreadSanitizer" "$log")
  if [ "$reports" -gt 0 ]; then
    echo "== $kind: $reports sanitizer report(s) in the test output ($log):"
    grep -E "ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|WARNING: ThreadSanitizer|ERROR: ThreadSanitizer|SUMMARY:" "$log" | sort | uniq -c | head -40
    rc=1
  else
    echo "== $kind: no sanitizer reports"
  fi
  return $rc
}

case "$which" in
  all)
    run_kind address "$@" || status=1
    run_kind thread "$@" || status=1
    ;;
  *) run_kind "$which" "$@" || status=1 ;;
esac
exit $status
