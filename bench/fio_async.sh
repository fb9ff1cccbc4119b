#!/bin/sh
# fio's asynchronous engines traced against untraced: the IOPS fio itself
# reports for random 4 KiB reads at iodepth 64 from the page cache (the
# tracer's cost shows most where the storage costs least), and whether
# every request fio logged (--write_iolog) is in the trace, at its offset.
#
#   bench/fio_async.sh [BUILD_DIR [SECONDS [ENGINES [REPS]]]]
#
# ENGINES: "io_uring libaio posixaio" by default. REPS runs of each
# (default 1), untraced then traced in turn, SECONDS (default 5) each, on a
# 256 MiB file read once into the page cache first; the IOPS are the runs'
# medians (fio's own figure moves by a tenth between runs of one build);
# the last traced run's trace is checked against its log. fio >= 3.27
# enters io_uring with its own syscall instruction on x86-64 and arm64: no
# preloaded library sees those requests (the trace has the ring, as
# io_uring_ring), which the last column says.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
seconds=${2:-5}
engines=${3:-io_uring libaio posixaio}
reps=${4:-1}
lib=$build/lib/libdlprof.so
dump=$build/tools/dlprof-dump
command -v fio >/dev/null || { echo "fio_async.sh: fio is not installed" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-fio.XXXXXX")
trap 'rm -rf "$work"' EXIT
data=$work/data.bin
fio --name=make --filename="$data" --rw=write --bs=1M --size=256M --output=/dev/null
cat "$data" >/dev/null

iops() {  # $1: engine, $2: untraced|traced, $3: iodepth, $4: extra fio options
  set -- "$1" "$2" "$3" "--name=job --filename=$data --ioengine=$1 --rw=randread --bs=4k --size=256M --iodepth=$3 --direct=0 --time_based --runtime=$seconds --output-format=json --output=$work/out.json $4"
  if [ "$2" = traced ]; then
    # shellcheck disable=SC2086
    env DLPROF_DIR="$work/trace-$1" DLPROF_QUIET=1 LD_PRELOAD="$lib" fio $4 >/dev/null
  else
    # shellcheck disable=SC2086
    fio $4 >/dev/null
  fi
  python3 -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["jobs"][0]["read"]["iops"])' \
    "$work/out.json"
}

median() {
  tr ' ' '\n' | sort -n |
    awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

echo "fio randread 4 KiB, iodepth 64, page cache, ${seconds} s each, median of $reps run(s)"
printf "  %-9s %10s %10s %7s  %s\n" engine untraced traced ratio "requests in the trace / fio's log"
for e in $engines; do
  # (Both runs write fio's log: the same work but for the tracer.)
  us="" ts=""
  for _ in $(seq "$reps"); do
    rm -f "$work/iolog-$e-untraced"
    us="$us $(iops "$e" untraced 64 "--write_iolog=$work/iolog-$e-untraced")"
    rm -rf "$work/trace-$e" "$work/iolog-$e"  # (fio appends to a log)
    ts="$ts $(iops "$e" traced 64 "--write_iolog=$work/iolog-$e")"
  done
  u=$(echo $us | median)
  t=$(echo $ts | median)
  logged=$(grep -c ' read ' "$work/iolog-$e" || true)
  traced=$("$dump" --format jsonl "$work/trace-$e" 2>/dev/null |
    grep -c '"cat":"aio","name":"\(io_uring_read\|linux_aio_pread\|aio_read\)"' || true)
  ring=$("$dump" --format jsonl "$work/trace-$e" 2>/dev/null | grep '"name":"io_uring_ring"' |
    sed 's/.*"size":\([0-9]*\).*/ (io_uring_ring: \1 requests)/' | head -n 1)
  printf "  %-9s %10s %10s %7s  %s / %s%s\n" "$e" "$u" "$t" \
    "$(awk -v u="$u" -v t="$t" 'BEGIN {printf "%.3f", t / u}')" "$traced" "$logged" "$ring"
done
