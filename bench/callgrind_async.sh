#!/bin/sh
# Instructions per traced asynchronous request, counted by valgrind's
# callgrind (bench/callgrind_pread.sh's model: immune to a shared machine's
# noise), to hold against a traced pread's.
#
#   bench/callgrind_async.sh [BUILD_DIR [REQUESTS [DEPTH [BATCH]]]]
#
# Runs bench/async_overhead (1 thread, REQUESTS random reads of 4 KiB from
# the page cache, default 50000, DEPTH in flight, default 8, BATCH published
# per submission, default 1 as fio submits) through io_uring by syscall(),
# Linux AIO by syscall() and POSIX AIO, under callgrind, untraced and with
# LD_PRELOAD=libdlprof.so, and prints instructions (Ir) per request in the
# program's loop (what it pays: the submission, the completion seen, the
# reap recorded; POSIX AIO's own helper threads are glibc's) and on the
# tracer's flusher thread, with the traced thread's top functions. Under
# valgrind clock_gettime is not the vDSO fast path (the requests' times come
# from it), so the clock's own instructions are not representative.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
requests=${2:-50000}
depth=${3:-8}
batch=${4:-1}
prog=$build/bench/async_overhead
lib=$build/lib/libdlprof.so
command -v valgrind >/dev/null || { echo "callgrind_async.sh: valgrind is not installed" >&2; exit 2; }
[ -x "$prog" ] && [ -f "$lib" ] || { echo "callgrind_async.sh: build first ($prog, $lib)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-callgrind.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$prog" --file "$work/data.bin" --create --file-mb 64
cat "$work/data.bin" >/dev/null  # in the page cache

. "$here/callgrind_common.sh"
profile() {  # $1: untraced|traced, $2: engine
  callgrind_run "$1-$2" "$([ "$1" = traced ] && echo 1 || echo 0)" "$prog" --file "$work/data.bin" \
    --engine "$2" --requests "$requests" --depth "$depth" --batch "$batch"
}

echo "callgrind, $requests random reads of 4 KiB, $depth in flight, $batch per submission," \
  "1 thread (instructions per request)"
for engine in uring linux-aio posix-aio; do
  fn=run_$(echo "$engine" | tr - _)
  profile untraced "$engine"
  profile traced "$engine"
  # What the requests cost: the engine's loop, inclusive (the runtime's
  # start and the exit's final pass are outside it), less the rings it
  # drained itself when they were full; those and the final pass are the
  # flusher's (callgrind_common.sh).
  pt=$(thread_file "traced-$engine" "$fn")
  u=$(incl_of "$(thread_file "untraced-$engine" "$fn")" ":$fn ")
  drained=$(incl_of "$pt" 'TraceSink::TryDrainFromProducer\(')
  t=$(($(incl_of "$pt" ":$fn ") - drained))
  tf=$(thread_file "traced-$engine" TraceSink::Loop)
  f=$([ -n "$tf" ] && ir_of "$tf" || echo 0)
  f=$((f + drained + $(incl_of "$pt" 'TraceSink::Close\(')))
  events=$("$build/tools/dlprof-dump" --format jsonl "$work/trace-traced-$engine" 2>/dev/null |
    grep -c '"cat":"aio"' || true)
  echo "  $engine: $events requests in the trace"
  awk -v u="$u" -v t="$t" -v f="$f" -v n="$requests" 'BEGIN {
    printf "    program loop, untraced:   %7.1f Ir/request\n", u / n
    printf "    program loop, traced:     %7.1f Ir/request  (added %.1f)\n", t / n, (t - u) / n
    printf "    flusher thread:           %7.1f Ir/request\n", f / n
  }'
  echo "    traced program thread, top functions (Ir/request, exclusive):"
  top "$(thread_file "traced-$engine" "$fn")" "$requests"
done
