#!/bin/sh
# Decoder speed: events per second of dlprof-dump --summary and of
# --format jsonl on one trace of N preads (default 10 million), and the
# decoder's peak memory; then --summary of an annotated trace of as many
# preads (a region "step" per 64 reads, "epoch N" per 100 steps), whose
# region section is measured while streaming.
#
#   bench/decode_speed.sh [BUILD_DIR [EVENTS]]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
events=${2:-10000000}
work=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-decode.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$build/bench/pread_overhead" --file "$work/data.bin" --create --file-mb 64 >/dev/null
DLPROF_DIR="$work/traces" DLPROF_QUIET=1 LD_PRELOAD="$build/lib/libdlprof.so" \
  "$build/bench/pread_overhead" --file "$work/data.bin" --iters "$events" --warmup 0 \
  --clock-iters 1 --pattern random >/dev/null
trace=$(ls "$work"/traces/*.dlprof)
echo "trace: $(stat -c %s "$trace") bytes for $events preads"

measure() {  # $1: label, $2: trace, rest: dlprof-dump arguments
  label=$1
  input=$2
  shift 2
  /usr/bin/time -f "%e %M" -o "$work/time" "$build/tools/dlprof-dump" "$@" "$input" >/dev/null
  read -r secs kib <"$work/time"
  awk -v l="$label" -v s="$secs" -v n="$events" -v k="$kib" \
    'BEGIN { printf "%-11s %6.2f s  %6.2f M events/s  peak RSS %d MiB\n", l, s, n / s / 1e6, k / 1024 }'
}
measure summary "$trace" --summary
measure summary-1t "$trace" --threads 0 --summary
measure jsonl "$trace" --format jsonl
measure text "$trace" --format text

DLPROF_DIR="$work/annotated" DLPROF_QUIET=1 LD_PRELOAD="$build/lib/libdlprof.so" \
  "$build/bench/pread_overhead" --file "$work/data.bin" --iters "$events" --warmup 0 \
  --clock-iters 1 --pattern random --step 64 >/dev/null
annotated=$(ls "$work"/annotated/*.dlprof)
echo "annotated trace: $(stat -c %s "$annotated") bytes"
measure regions "$annotated" --summary
measure regions-1t "$annotated" --threads 0 --summary
