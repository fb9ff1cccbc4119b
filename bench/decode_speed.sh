#!/bin/sh
# Decoder speed: events per second of dlprof-dump --summary and of
# --format jsonl on one trace of N preads (default 10 million), and the
# decoder's peak memory.
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

measure() {  # $1: label, rest: dlprof-dump arguments
  label=$1
  shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$build/tools/dlprof-dump" "$@" "$trace" >/dev/null
  read -r secs kib <"$work/time"
  awk -v l="$label" -v s="$secs" -v n="$events" -v k="$kib" \
    'BEGIN { printf "%-8s %6.2f s  %6.2f M events/s  peak RSS %d MiB\n", l, s, n / s / 1e6, k / 1024 }'
}
measure summary --summary
measure summary-1t --threads 0 --summary
measure jsonl --format jsonl
measure text --format text
