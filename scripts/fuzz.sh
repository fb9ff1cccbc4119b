#!/usr/bin/env bash
# Fuzzes the trace decoder for a bounded time (issue 6).
#
#   scripts/fuzz.sh [SECONDS] [--regen-corpus]
#
# Builds build-fuzz with clang (-DDLPROF_FUZZ=ON: libFuzzer coverage, ASan and
# UBSan over the format library and dlprof-dump's loader, analysis and
# writers) and runs tests/fuzz/trace_fuzzer.cc for SECONDS (default 60),
# seeded with tests/fuzz/corpus (copied: new inputs stay in
# build-fuzz/fuzz-corpus). Any crash, timeout, leak or out-of-memory input is
# copied to tests/fuzz/crashes/, where unit.fuzz_replay replays it in every
# normal build from then on, and the script fails.
#
# --regen-corpus first rewrites tests/fuzz/corpus from fresh real traces
# (tests/fuzz/make_corpus.sh, needs a normal build in build/ or $DLPROF_BUILD_DIR).
#
# Memory: -rss_limit_mb=2048 and -malloc_limit_mb=1024: one input may not
# make the decoder allocate more than 1 GiB at once (the format's limits keep
# a block under 64 MiB compressed + 64 MiB raw + its decoded events).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
SECONDS_TO_RUN=60
REGEN=0
for a in "$@"; do
  case "$a" in
    --regen-corpus) REGEN=1 ;;
    *) SECONDS_TO_RUN="$a" ;;
  esac
done
if [ "$REGEN" = 1 ]; then
  tests/fuzz/make_corpus.sh "${DLPROF_BUILD_DIR:-build}"
fi

BUILD="$ROOT/build-fuzz"
mkdir -p "$BUILD"
CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDLPROF_FUZZ=ON -DDLPROF_WITH_CUDA=OFF -DDLPROF_BUILD_BENCH=OFF > "$BUILD/fuzz-configure.log" 2>&1 \
  || { cat "$BUILD/fuzz-configure.log"; exit 1; }
cmake --build "$BUILD" -j "$(nproc)" --target dlprof_trace_fuzzer > "$BUILD/fuzz-build.log" 2>&1 \
  || { tail -40 "$BUILD/fuzz-build.log"; exit 1; }

WORK="$BUILD/fuzz-corpus"
ARTIFACTS="$BUILD/fuzz-artifacts"
rm -rf "$ARTIFACTS"
mkdir -p "$WORK" "$ARTIFACTS"
cp -n tests/fuzz/corpus/* "$WORK"/ 2>/dev/null || true
cp -n tests/fuzz/crashes/* "$WORK"/ 2>/dev/null || true

set +e
ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  "$BUILD/tests/fuzz/dlprof_trace_fuzzer" "$WORK" \
  -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
  -max_len=262144 -print_final_stats=1 -artifact_prefix="$ARTIFACTS/" 2>&1 | tee "$BUILD/fuzz.log" \
  | grep -E "^#[0-9]+ +(INITED|DONE)|stat::|ERROR|SUMMARY|Test unit written|==[0-9]+==" || true
rc=${PIPESTATUS[0]}
set -e

found=$(find "$ARTIFACTS" -type f | wc -l)
if [ "$found" -gt 0 ]; then
  cp "$ARTIFACTS"/* tests/fuzz/crashes/
  echo "fuzz.sh: $found failing input(s) kept in tests/fuzz/crashes/ (exit status $rc)"
  exit 1
fi
if [ "$rc" -ne 0 ]; then
  echo "fuzz.sh: the fuzzer failed (exit status $rc); see $BUILD/fuzz.log"
  exit 1
fi
echo "fuzz.sh: no failure in ${SECONDS_TO_RUN}s; corpus now $(ls "$WORK" | wc -l) inputs"
