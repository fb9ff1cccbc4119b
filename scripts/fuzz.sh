#!/usr/bin/env bash
# Fuzzes the trace decoder for a bounded time (issue 6).
#
#   scripts/fuzz.sh [SECONDS] [--regen-corpus]
#
# Builds build-fuzz with clang (-DDLPROF_FUZZ=ON: libFuzzer coverage, ASan and
# UBSan over the format library and dlprof-dump's loader, analysis and
# writers) and runs, for SECONDS in all (default 60, half each):
#   dlprof_trace_fuzzer  TraceReader and DecodeBlockPayload alone (fast)
#   dlprof_dump_fuzzer   the same plus all dlprof-dump does with a trace
# both from tests/fuzz/trace_fuzzer.cc, seeded with tests/fuzz/corpus and
# tests/fuzz/crashes (copied: new inputs stay in build-fuzz/fuzz-corpus).
# Any crash, timeout, leak or out-of-memory input is copied to
# tests/fuzz/crashes/, where unit.fuzz_replay replays it in every normal build
# from then on, and the script fails.
#
# --regen-corpus first rewrites tests/fuzz/corpus from fresh real traces
# (tests/fuzz/make_corpus.sh; needs a normal build in build/ or
# $DLPROF_BUILD_DIR).
#
# Memory: -rss_limit_mb=2048 and -malloc_limit_mb=1024: one input may not
# make the decoder allocate more than 1 GiB at once (docs/RELIABILITY.md has
# the bound the format's limits give).
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
cmake --build "$BUILD" -j "$(nproc)" --target dlprof_trace_fuzzer dlprof_dump_fuzzer \
  > "$BUILD/fuzz-build.log" 2>&1 || { tail -40 "$BUILD/fuzz-build.log"; exit 1; }

WORK="$BUILD/fuzz-corpus"
ARTIFACTS="$BUILD/fuzz-artifacts"
rm -rf "$ARTIFACTS"
mkdir -p "$WORK" "$ARTIFACTS"
cp -n tests/fuzz/corpus/* "$WORK"/ 2>/dev/null || true
find tests/fuzz/crashes -type f ! -name '.*' -exec cp -n {} "$WORK"/ \; 2>/dev/null || true

half=$(( SECONDS_TO_RUN / 2 > 0 ? SECONDS_TO_RUN / 2 : 1 ))
status=0
total=0
for fuzzer in dlprof_trace_fuzzer dlprof_dump_fuzzer; do
  log="$BUILD/$fuzzer.log"
  set +e
  ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$BUILD/tests/fuzz/$fuzzer" "$WORK" -max_total_time="$half" -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=262144 -print_final_stats=1 \
    -artifact_prefix="$ARTIFACTS/" > "$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  total=$(( total + ${runs:-0} ))
  echo "fuzz.sh: $fuzzer: ${runs:-?} inputs in ${half}s, exit status $rc ($log)"
  grep -E "^#[0-9]+ +DONE|ERROR|SUMMARY" "$log" | head -5 || true
  [ "$rc" -eq 0 ] || status=1
done

found=$(find "$ARTIFACTS" -type f | wc -l)
if [ "$found" -gt 0 ]; then
  cp "$ARTIFACTS"/* tests/fuzz/crashes/
  echo "fuzz.sh: $found failing input(s) kept in tests/fuzz/crashes/"
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "fuzz.sh: a fuzzer failed; see the logs above"
  exit 1
fi
echo "fuzz.sh: no failure; $total inputs run in ${SECONDS_TO_RUN}s; corpus now $(ls "$WORK" | wc -l) inputs"
