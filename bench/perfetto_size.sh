#!/bin/sh
# Size and speed of dlprof-dump --format perfetto against --format chrome,
# on two traces (issue 21's targets: at most 20 bytes per event, written at
# least 5x faster than the Chrome JSON):
#   lseek  bench/lseek_loop, EVENTS lseek calls (the cheapest event);
#   mixed  bench/perfetto_mixed_app against the fake libcupti of tests/gpu
#          (no GPU needed): per step two kernel launches (an API call and a
#          kernel each, with their correlation) and a 4 KiB pread, EVENTS/5
#          steps.
# Perfetto's format is written with each compression (--perfetto-compression
# deflate, the default, and zstd).
# Each output is written REPEAT times (default 3), the formats alternating
# so that a busy spell of a shared machine falls on all alike; the best run
# is reported: wall seconds, CPU seconds (user + system), and the writer's
# own CPU: the run's CPU less that of the same run keeping no event
# (--pid 0: the traces are read and decoded, nothing is written).
#
#   bench/perfetto_size.sh [BUILD_DIR [EVENTS [REPEAT]]]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
events=${2:-2000000}
repeat=${3:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-perfetto.XXXXXX")
trap 'rm -rf "$work"' EXIT
dump="$build/tools/dlprof-dump"

head -c 1048576 /dev/zero >"$work/data"
DLPROF_DIR="$work/lseek" DLPROF_QUIET=1 LD_PRELOAD="$build/lib/libdlprof.so" \
  "$build/bench/lseek_loop" "$work/data" "$events"
traces="lseek"
fake=$(ls "$build"/tests/gpu/fake_cupti/libcupti.so.* 2>/dev/null | head -1 || true)
plugin="$build/lib/libdlprof_cupti.so"
if [ -n "$fake" ] && [ -e "$plugin" ]; then
  cc -O2 -o "$work/mixed_app" "$here/perfetto_mixed_app.c" -ldl
  DLPROF_DIR="$work/mixed" DLPROF_QUIET=1 DLPROF_CUDA=kernel,runtime DLPROF_CUPTI_FLUSH_MS=10 \
    LD_PRELOAD="$build/lib/libdlprof.so:$fake" \
    "$work/mixed_app" "$plugin" "$work/data" $((events / 5))
  traces="$traces mixed"
else
  echo "mixed: skipped (no CUPTI plugin or fake libcupti in $build)"
fi

run() {  # $1 trace, $2 label, rest: dlprof-dump options; appends "wall cpu" to $work/$1.$2
  trace=$1
  label=$2
  shift 2
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$dump" --threads 0 "$@" "$work/$trace" \
    -o "$work/out.$trace.$label" 2>/dev/null
  awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$work/time" >>"$work/$trace.$label"
}
best() {  # $1 file, $2 column: the smallest value
  sort -n -k"$2" "$1" | head -1 | awk -v c="$2" '{ print $c }'
}

for trace in $traces; do
  n=$("$dump" --format jsonl "$work/$trace" | wc -l)
  i=0
  while [ $i -lt "$repeat" ]; do
    run "$trace" chrome --format chrome
    run "$trace" perfetto --format perfetto
    run "$trace" zstd --format perfetto --perfetto-compression zstd
    run "$trace" none --format chrome --pid 0
    i=$((i + 1))
  done
  none_cpu=$(best "$work/$trace.none" 2)
  echo "$trace: $n events (decoding alone: $(best "$work/$trace.none" 1) s wall, $none_cpu s CPU)"
  for label in chrome perfetto zstd; do
    size=$(stat -c %s "$work/out.$trace.$label")
    wall=$(best "$work/$trace.$label" 1)
    cpu=$(best "$work/$trace.$label" 2)
    echo "$label $size $n $wall $cpu $none_cpu" | awk '{
      printf "  %-9s %11d bytes %7.2f B/event   %6.2f s wall  %6.2f s CPU  %6.2f s CPU writing\n",
             $1, $2, $2 / $3, $4, $5, $5 - $6 }'
    echo "$wall $cpu" >"$work/$trace.$label.best"
  done
  read -r cw cc <"$work/$trace.chrome.best"
  for label in perfetto zstd; do
    read -r pw pc <"$work/$trace.$label.best"
    echo "$label $cw $cc $pw $pc $none_cpu" | awk '{
      w = ($5 - $6 > 0.005) ? ($3 - $6) / ($5 - $6) : 0
      printf "  chrome/%s: %.1fx wall, %.1fx CPU, %.1fx CPU writing\n", $1, $2 / $4, $3 / $5, w }'
  done
done
