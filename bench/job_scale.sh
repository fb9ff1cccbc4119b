#!/bin/sh
# Job-scale decoding: `dlprof-dump --summary` of a directory of many traces
# (HOSTS simulated hosts x PROCS processes each, default 8 x 128 = 1,024
# traces) against one trace of the same number of events (default 50 M), in
# one run: both times, both peak memories and their ratios.
#
# Hosts are simulated with Linux namespaces (unshare --uts --pid --fork
# --mount-proc): each has its own host name, and pids collide across hosts,
# as on a real cluster. Each process runs an lseek loop (bench/lseek_loop.c).
# The two --summary runs alternate REPEAT times (default 3); the best and
# the median of each are printed.
#
#   bench/job_scale.sh [BUILD_DIR [EVENTS [HOSTS [PROCS [REPEAT]]]]]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
events=${2:-50000000}
hosts=${3:-8}
procs=${4:-128}
repeat=${5:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-jobscale.XXXXXX")
trap 'rm -rf "$work"' EXIT
lib="$build/lib/libdlprof.so"
loop="$build/bench/lseek_loop"
head -c 1048576 /dev/zero >"$work/data.bin"
# One job: every process of the simulated hosts belongs to one run.
export DLPROF_RUN_ID=job-scale

per_proc=$((events / (hosts * procs)))
echo "making $hosts hosts x $procs processes x $per_proc lseeks ..."
h=0
while [ "$h" -lt "$hosts" ]; do
  # Each host: its own name and pid namespace; its processes run 16 at a time.
  unshare --uts --pid --fork --mount-proc sh -c '
    hostname "node$0"
    i=0
    while [ "$i" -lt "$1" ]; do
      DLPROF_DIR="$2/job" DLPROF_QUIET=1 LD_PRELOAD="$3" "$4" "$5" "$6" &
      i=$((i + 1))
      [ $((i % 16)) -eq 0 ] && wait
    done
    wait' "$h" "$procs" "$work" "$lib" "$loop" "$work/data.bin" "$per_proc"
  h=$((h + 1))
done
total=$((per_proc * hosts * procs))
echo "making one trace of $total lseeks ..."
DLPROF_DIR="$work/one" DLPROF_QUIET=1 LD_PRELOAD="$lib" "$loop" "$work/data.bin" "$total"
echo "job: $(find "$work/job" -name "*.dlprof" | wc -l) traces, $(du -sk "$work/job" | cut -f1) KiB;" \
     "one: $(du -sk "$work/one" | cut -f1) KiB"

run() {  # $1: label, $2: input; adds "secs KiB" to $work/$1.runs
  /usr/bin/time -f "%e %M" -o "$work/time" "$build/tools/dlprof-dump" --summary --format json \
    "$2" >"$work/$1.json"
  cat "$work/time" >>"$work/$1.runs"
}
i=0
while [ "$i" -lt "$repeat" ]; do
  run one "$work/one"
  run job "$work/job"
  i=$((i + 1))
done
stats() {  # $1: label -> "best median peak_kib"
  sort -n "$work/$1.runs" | awk '{ s[NR] = $1; if ($2 > k) k = $2 }
    END { printf "%s %s %d\n", s[1], s[int((NR + 1) / 2)], k }'
}
set -- $(stats one) $(stats job)
awk -v ob="$1" -v om="$2" -v ok="$3" -v jb="$4" -v jm="$5" -v jk="$6" -v n="$total" 'BEGIN {
  printf "one trace   best %6.2f s  median %6.2f s  peak RSS %6d MiB\n", ob, om, ok / 1024
  printf "1 job dir   best %6.2f s  median %6.2f s  peak RSS %6d MiB\n", jb, jm, jk / 1024
  printf "job / one:  time %.2fx (best)  %.2fx (median)  memory %.2fx   (%d events)\n",
         jb / ob, jm / om, jk / ok, n }'
# The same events must give the same I/O figures (the processes differ).
python3 - "$work/one.json" "$work/job.json" <<'PY'
import json, sys
one, job = (json.load(open(p)) for p in sys.argv[1:])
for key in ("events",):
    print("%s: one %d, job %d" % (key, one[key], job[key]))
if one["events"] + 2 * (job["processes"] - 1) != job["events"] or one["run"]["ops"]["seek"] != job["run"]["ops"]["seek"]:
    sys.exit("the job's figures differ from the one trace's")
PY
