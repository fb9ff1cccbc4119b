#!/bin/sh
# Cost of DLPROF_STACKS=1 per traced pread, against stacks off and no tracer.
#
#   bench/stacks_overhead.sh [BUILD_DIR] [ITERS] [DEPTH] [RUNS]
#
# BUILD_DIR holds lib/libdlprof.so (default: build). Compiles
# bench/stacks_overhead.c with cc, makes a 1 MiB page-cached file, runs each
# configuration RUNS times (default 5) and prints the median ns per call.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
iters=${2:-200000}
depth=${3:-10}
runs=${4:-5}
lib=$(cd "$build/lib" && pwd)/libdlprof.so
[ -f "$lib" ] || { echo "no $lib: build the project first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -g -fno-omit-frame-pointer -o "$tmp/stacks_overhead" "$here/stacks_overhead.c"
head -c 1048576 /dev/zero > "$tmp/data.bin"

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
field() { sed -n "s/.*\"$1\":\([0-9.-]*\).*/\1/p"; }

run() {  # label, then env assignments
  label=$1
  shift
  : > "$tmp/out"
  i=0
  while [ $i -lt "$runs" ]; do
    rm -rf "$tmp/traces"
    env "$@" DLPROF_DIR="$tmp/traces" DLPROF_QUIET=1 \
      "$tmp/stacks_overhead" "$tmp/data.bin" "$iters" "$depth" >> "$tmp/out"
    i=$((i + 1))
  done
  per=$(field ns_per_pread < "$tmp/out" | median)
  added=$(field added_ns < "$tmp/out" | median)
  printf '%-28s %10s ns/pread %10s ns added over a raw syscall\n' "$label" "$per" "$added"
}

echo "preads of 4 KiB, $iters per run, $depth extra frames, median of $runs runs"
run "no dlprof"
run "dlprof, stacks off" LD_PRELOAD="$lib"
run "dlprof, DLPROF_STACKS=1" LD_PRELOAD="$lib" DLPROF_STACKS=1
