#!/bin/sh
# Instructions per traced pread, counted by valgrind's callgrind: immune to
# the noise of a shared machine, unlike any timing.
#
#   bench/callgrind_pread.sh [BUILD_DIR [CALLS [PATTERN]]]
#
# Runs bench/pread_overhead (1 thread, CALLS preads of 4 KiB, default 100000,
# PATTERN seq (default) or random)
# under callgrind, untraced and with LD_PRELOAD=libdlprof.so, one profile per
# thread, and prints instructions (Ir) per call for the worker thread (the
# cost the traced program pays on its own thread) and for the tracer's
# flusher thread (encoding and compressing the events), with their top
# functions. Under valgrind clock_gettime is not the vDSO fast path, so the
# clock's own instructions are not representative; the wrapper's are.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
calls=${2:-100000}
pattern=${3:-seq}
prog=$build/bench/pread_overhead
lib=$build/lib/libdlprof.so
command -v valgrind >/dev/null || { echo "callgrind_pread.sh: valgrind is not installed" >&2; exit 2; }
[ -x "$prog" ] && [ -f "$lib" ] || { echo "callgrind_pread.sh: build first ($prog, $lib)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-callgrind.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$prog" --file "$work/data.bin" --create --file-mb 64

. "$here/callgrind_common.sh"
profile() {  # $1: untraced|traced
  callgrind_run "$1" "$([ "$1" = traced ] && echo 1 || echo 0)" "$prog" --file "$work/data.bin" \
    --threads 1 --iters "$calls" --warmup 0 --clock-iters 1000 --pattern "$pattern"
}

profile untraced
profile traced
uw=$(thread_file untraced run_worker)
tw=$(thread_file traced run_worker)
tf=$(thread_file traced TraceSink::Loop)
u=$(ir_of "$uw")
t=$(ir_of "$tw")
f=$(ir_of "$tf")
# The writer's work on the worker's thread (a ring drained when full: the
# flusher's work, counted as such; callgrind_common.sh).
drained=$(incl_of "$tw" 'TraceSink::TryDrainFromProducer\(')
t=$((t - drained))
f=$((f + drained))
encoder=$(incl_of "$tf" 'BlockEncoder::AddEvents')
events=$([ -n "$(find "$work/trace-traced" -name "*.dlprof" 2>/dev/null)" ] && "$build/tools/dlprof-dump" --format jsonl "$work/trace-traced" | wc -l || echo "?")

echo "callgrind, $calls $pattern preads of 4 KiB, 1 thread (instructions per call)"
awk -v u="$u" -v t="$t" -v f="$f" -v e="${encoder:-0}" -v n="$calls" 'BEGIN {
  printf "  worker thread, untraced: %7.1f Ir/call\n", u / n
  printf "  worker thread, traced:   %7.1f Ir/call  (added %.1f)\n", t / n, (t - u) / n
  printf "  flusher thread:          %7.1f Ir/event  (the encoder, inclusive: %.1f)\n", f / n, e / n
}'
echo "  events in the trace: $events"
[ "$drained" -eq 0 ] ||
  echo "  (the worker drained the rings itself: its $drained instructions counted as the flusher's)"
echo "  traced worker thread, top functions (Ir/call, exclusive):"
top "$tw" "$calls"
echo "  flusher thread, top functions (Ir/event, exclusive):"
top "$tf" "$calls"
