#!/bin/sh
# Decoder speed: events per second of dlprof-dump --summary and of
# --format jsonl on one trace of N preads (default 10 million), and the
# decoder's peak memory; then --summary of an annotated trace of as many
# preads (a region "step" per 64 reads, "epoch N" per 100 steps), whose
# region section is measured while streaming.
#
# Each measure is taken REPEAT times (default 3), alternating with the others
# so that a busy spell of a shared machine falls on all of them alike, and
# the best and the median are printed: the best is the closest to what the
# code costs, the spread says how noisy the machine was.
#
#   bench/decode_speed.sh [BUILD_DIR [EVENTS [REPEAT]]]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
events=${2:-10000000}
repeat=${3:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-decode.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$build/bench/pread_overhead" --file "$work/data.bin" --create --file-mb 64 >/dev/null
DLPROF_DIR="$work/traces" DLPROF_QUIET=1 LD_PRELOAD="$build/lib/libdlprof.so" \
  "$build/bench/pread_overhead" --file "$work/data.bin" --iters "$events" --warmup 0 \
  --clock-iters 1 --pattern random >/dev/null
trace=$(find "$work/traces" -name "*.dlprof")  # below <run>/<host>/
echo "trace: $(stat -c %s "$trace") bytes for $events preads"

run() {  # $1: label, $2: trace, rest: dlprof-dump arguments; adds "secs KiB" to $work/$1.runs
  label=$1
  input=$2
  shift 2
  /usr/bin/time -f "%e %M" -o "$work/time" "$build/tools/dlprof-dump" "$@" "$input" >/dev/null
  cat "$work/time" >>"$work/$label.runs"
}
report() {  # $1: label
  sort -n "$work/$1.runs" | awk -v l="$1" -v n="$events" '
    { s[NR] = $1; if ($2 > k) k = $2 }
    END { best = s[1]; med = s[int((NR + 1) / 2)]
          printf "%-11s best %5.2f s  %6.2f M events/s   median %5.2f s  %6.2f M events/s  (%d runs)  peak RSS %d MiB\n",
                 l, best, n / best / 1e6, med, n / med / 1e6, NR, k / 1024 }'
}

DLPROF_DIR="$work/annotated" DLPROF_QUIET=1 LD_PRELOAD="$build/lib/libdlprof.so" \
  "$build/bench/pread_overhead" --file "$work/data.bin" --iters "$events" --warmup 0 \
  --clock-iters 1 --pattern random --step 64 >/dev/null
annotated=$(find "$work/annotated" -name "*.dlprof")
echo "annotated trace: $(stat -c %s "$annotated") bytes"

i=0
while [ "$i" -lt "$repeat" ]; do
  run summary "$trace" --summary
  run summary-1t "$trace" --threads 0 --summary
  run jsonl "$trace" --format jsonl
  run text "$trace" --format text
  run regions "$annotated" --summary
  run regions-1t "$annotated" --threads 0 --summary
  i=$((i + 1))
done
for label in summary summary-1t jsonl text regions regions-1t; do report "$label"; done
