#!/usr/bin/env bash
# Fuzzes the trace decoder for a bounded time, and keeps what it discovers
# (issues 6 and 24).
#
#   scripts/fuzz.sh [SECONDS] [--only T1,T2,...] [--no-merge] [--regen-corpus]
#
# Builds $DLPROF_FUZZ_BUILD_DIR (default build-fuzz) with clang
# (-DDLPROF_FUZZ=ON: libFuzzer coverage, ASan and UBSan over the format
# library and dlprof-dump's loader, analysis and writers) and runs each
# target for an equal share of SECONDS (default 60 in all):
#
#   trace   dlprof_trace_fuzzer   TraceReader and DecodeBlockPayload alone
#   dump    dlprof_dump_fuzzer    the same plus all dlprof-dump does with it
#           (both tests/fuzz/trace_fuzzer.cc, corpus tests/fuzz/corpus)
#   header  dlprof_header_fuzzer  the file header      (header_fuzzer.cc)
#   block   dlprof_block_fuzzer   block framing         (block_fuzzer.cc)
#   column  dlprof_column_fuzzer  the column codecs     (column_fuzzer.cc)
#   varint  dlprof_varint_fuzzer  the varint readers    (varint_fuzzer.cc)
#   reader  dlprof_reader_fuzzer  a directory of traces through the C ABI
#           (reader_fuzzer.cc: files cut at "\n--8<--\n")
#           (corpus tests/fuzz/corpus-<name>, crashes tests/fuzz/crashes-<name>)
#
# --only picks some of them. Each runs from a copy of its corpus and its kept
# crashes in the build folder; afterwards what it discovered is minimised
# into the repository's corpus (libFuzzer -merge=1: only inputs of at most
# 16 KiB that add coverage, none removed), to be committed, so that fuzzing
# accumulates from run to run. --no-merge leaves the repository alone. New
# coverage never fails the run.
#
# Any crash, timeout, leak or out-of-memory input is copied to the target's
# crashes folder, where unit.fuzz_replay* replays it in every normal build
# from then on, and the script fails.
#
# Every run appends "date target seconds executions exit-status" to
# $BUILD/fuzz-runs.tsv (the totals in docs/RELIABILITY_DECODER.md add these up).
#
# --regen-corpus first rewrites tests/fuzz/corpus from fresh real traces
# (tests/fuzz/make_corpus.sh; needs a normal build in build/ or
# $DLPROF_BUILD_DIR).
#
# Memory: -rss_limit_mb=2048 and -malloc_limit_mb=1024: one input may not
# make the decoder allocate more than 1 GiB at once (docs/RELIABILITY_DECODER.md
# has the bound the format's limits give).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
SECONDS_TO_RUN=60
REGEN=0
MERGE=1
ALL="trace dump header block column varint reader"
ONLY="$ALL"
while [ $# -gt 0 ]; do
  case "$1" in
    --regen-corpus) REGEN=1 ;;
    --no-merge) MERGE=0 ;;
    --only) ONLY="${2//,/ }"; shift ;;
    --only=*) ONLY="${1#--only=}"; ONLY="${ONLY//,/ }" ;;
    -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
    *) SECONDS_TO_RUN="$1" ;;
  esac
  shift
done
for t in $ONLY; do
  case " $ALL " in *" $t "*) ;; *) echo "fuzz.sh: unknown target '$t' (targets: $ALL)" >&2; exit 2 ;; esac
done
if [ "$REGEN" = 1 ]; then
  tests/fuzz/make_corpus.sh "${DLPROF_BUILD_DIR:-build}"
fi

BUILD="$ROOT/${DLPROF_FUZZ_BUILD_DIR:-build-fuzz}"
mkdir -p "$BUILD"
CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDLPROF_FUZZ=ON -DDLPROF_WITH_CUDA=OFF -DDLPROF_BUILD_BENCH=OFF > "$BUILD/fuzz-configure.log" 2>&1 \
  || { cat "$BUILD/fuzz-configure.log"; exit 1; }
binaries=()
for t in $ONLY; do binaries+=("dlprof_${t}_fuzzer"); done
cmake --build "$BUILD" -j "$(nproc)" --target "${binaries[@]}" \
  > "$BUILD/fuzz-build.log" 2>&1 || { tail -40 "$BUILD/fuzz-build.log"; exit 1; }

# Where each target's inputs live in the repository, and the longest input
# worth trying (a header is at most 64 KiB; blocks and traces are larger).
corpus_of() { case "$1" in trace|dump) echo tests/fuzz/corpus ;; *) echo "tests/fuzz/corpus-$1" ;; esac; }
crashes_of() { case "$1" in trace|dump) echo tests/fuzz/crashes ;; *) echo "tests/fuzz/crashes-$1" ;; esac; }
max_len_of() {
  case "$1" in
    trace|dump) echo 262144 ;; header) echo 70000 ;; block) echo 131072 ;;
    column) echo 65536 ;; varint) echo 4096 ;; reader) echo 262144 ;;
  esac
}

count=$(echo $ONLY | wc -w)
share=$(( SECONDS_TO_RUN / count > 0 ? SECONDS_TO_RUN / count : 1 ))
FLAGS=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024)
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
total=0
found=0
for t in $ONLY; do
  fuzzer="$BUILD/tests/fuzz/dlprof_${t}_fuzzer"
  corpus="$(corpus_of "$t")"
  crashes="$(crashes_of "$t")"
  # trace and dump share one corpus, so one working copy.
  work="$BUILD/fuzz-corpus-$(case "$t" in trace|dump) echo trace ;; *) echo "$t" ;; esac)"
  artifacts="$BUILD/fuzz-artifacts-$t"
  rm -rf "$artifacts"
  mkdir -p "$work" "$artifacts" "$crashes"
  cp -n "$corpus"/* "$work"/ 2>/dev/null || true
  find "$crashes" -type f ! -name '.*' -exec cp -n {} "$work"/ \; 2>/dev/null || true
  log="$BUILD/dlprof_${t}_fuzzer.log"
  started="$BUILD/.fuzz-started-$t"
  touch "$started"
  set +e
  "$fuzzer" "$work" -max_total_time="$share" -max_len="$(max_len_of "$t")" "${FLAGS[@]}" \
    -print_final_stats=1 -artifact_prefix="$artifacts/" > "$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  total=$(( total + ${runs:-0} ))
  printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$share" "${runs:-0}" "$rc" \
    >> "$BUILD/fuzz-runs.tsv"
  rate=$(( ${runs:-0} / share ))
  echo "fuzz.sh: $t: ${runs:-?} inputs in ${share}s (${rate}/s), exit status $rc ($log)"
  grep -E "^#[0-9]+ +DONE|ERROR|SUMMARY" "$log" | head -5 || true
  [ "$rc" -eq 0 ] || status=1
  n=$(find "$artifacts" -type f | wc -l)
  if [ "$n" -gt 0 ]; then
    cp "$artifacts"/* "$crashes"/
    echo "fuzz.sh: $t: $n failing input(s) kept in $crashes/"
    found=$(( found + n ))
  elif [ "$MERGE" = 1 ]; then
    # Only what adds coverage to the repository's corpus goes in; only this
    # run's new inputs of at most 16 KiB are candidates, so merging costs one
    # pass over the corpus plus them, and the committed corpus stays small
    # (larger finds stay in $work for the next run).
    fresh="$BUILD/fuzz-new-$t"
    rm -rf "$fresh"
    mkdir -p "$fresh"
    find "$work" -type f -newer "$started" -size -16385c -exec cp {} "$fresh"/ \;
    before=$(ls "$corpus" | wc -l)
    if "$fuzzer" -merge=1 "$corpus" "$fresh" -max_len="$(max_len_of "$t")" "${FLAGS[@]}" \
        > "$BUILD/dlprof_${t}_merge.log" 2>&1; then
      echo "fuzz.sh: $t: $(( $(ls "$corpus" | wc -l) - before )) new input(s) merged into $corpus/ (commit them)"
    else
      echo "fuzz.sh: $t: merging into $corpus/ failed; see $BUILD/dlprof_${t}_merge.log"
    fi
  fi
done

if [ "$found" -gt 0 ]; then
  echo "fuzz.sh: $found failing input(s) kept; replay them with the normal build's fuzz_replay*"
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "fuzz.sh: a fuzzer failed; see the logs above"
  exit 1
fi
echo "fuzz.sh: no failure; $total inputs run in ${SECONDS_TO_RUN}s"
