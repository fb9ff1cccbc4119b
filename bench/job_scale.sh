#!/bin/sh
# Job-scale decoding: `dlprof-dump --summary` of directories of many traces
# (HOSTS simulated hosts x PROCS processes each; PROCS may list several
# counts, default "128 1280": 1,024 and 10,240 traces) against one trace of
# the same number of events (default 50 M), in one run: the times, the peak
# memories and their ratios, a line per directory, side by side.
#
# Hosts are simulated with Linux namespaces (unshare --uts --pid --fork
# --mount-proc): each has its own host name, and pids collide across hosts,
# as on a real cluster. Each process runs an lseek loop (bench/lseek_loop.c).
# The --summary runs alternate REPEAT times (one trace, then each directory;
# default 3); the best and the median of each are printed. Then, once per
# directory, the HTML report (`--format html`) and the Perfetto timeline
# (`--format perfetto`): their time, peak memory and size (the timeline's
# in bytes per event).
#
# With RANKS=1 in the environment (default 0), each process is a rank of
# its own (RANK = its index in the job), as in a data-parallel job of that
# many GPUs, and the one trace is rank 0: the summary then measures every
# rank's figures, and the JSON and the report show the ranks past --top in
# a rank map.
#
#   bench/job_scale.sh [BUILD_DIR [EVENTS [HOSTS [PROCS [REPEAT]]]]]
#   bench/job_scale.sh build 50000000 8 "128 1280"
#   RANKS=1 bench/job_scale.sh build 50000000 8 "128 1280"
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
events=${2:-50000000}
hosts=${3:-8}
counts=${4:-128 1280}
repeat=${5:-3}
ranks=${RANKS:-0}
work=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-jobscale.XXXXXX")
trap 'rm -rf "$work"' EXIT
lib="$build/lib/libdlprof.so"
loop="$build/bench/lseek_loop"
head -c 1048576 /dev/zero >"$work/data.bin"
# One job: every process of the simulated hosts belongs to one run.
export DLPROF_RUN_ID=job-scale

make_job() {  # $1: processes per host -> $work/job-$1, $1 * hosts traces
  procs=$1
  per_proc=$((events / (hosts * procs)))
  echo "making $hosts hosts x $procs processes x $per_proc lseeks ..."
  h=0
  while [ "$h" -lt "$hosts" ]; do
    # Each host: its own name and pid namespace; its processes run 16 at a time.
    unshare --uts --pid --fork --mount-proc sh -c '
      hostname "node$0"
      i=0
      while [ "$i" -lt "$1" ]; do
        if [ "$7" = 1 ]; then export RANK=$(($0 * $1 + i)); fi
        DLPROF_DIR="$2" DLPROF_QUIET=1 LD_PRELOAD="$3" "$4" "$5" "$6" &
        i=$((i + 1))
        [ $((i % 16)) -eq 0 ] && wait
      done
      wait' "$h" "$procs" "$work/job-$procs" "$lib" "$loop" "$work/data.bin" "$per_proc" "$ranks"
    h=$((h + 1))
  done
  echo "job-$procs: $(find "$work/job-$procs" -name "*.dlprof" | wc -l) traces," \
       "$(du -sk "$work/job-$procs" | cut -f1) KiB, $((per_proc * hosts * procs)) lseeks"
}
for c in $counts; do make_job "$c"; done
# One trace of as many lseeks as the first directory (a count per process
# rounds the others' down by at most one lseek a process).
first=${counts%% *}
total=$(((events / (hosts * first)) * hosts * first))
echo "making one trace of $total lseeks ..."
# With RANKS=1 it is rank 0: the same figures to measure per event.
if [ "$ranks" = 1 ]; then export RANK=0; fi
DLPROF_DIR="$work/one" DLPROF_QUIET=1 LD_PRELOAD="$lib" "$loop" "$work/data.bin" "$total"
unset RANK
echo "one: $(du -sk "$work/one" | cut -f1) KiB"

run() {  # $1: label, $2: input; adds "secs KiB" to $work/$1.runs
  /usr/bin/time -f "%e %M" -o "$work/time" "$build/tools/dlprof-dump" --summary --format json \
    "$2" >"$work/$1.json"
  cat "$work/time" >>"$work/$1.runs"
}
i=0
while [ "$i" -lt "$repeat" ]; do
  run one "$work/one"
  for c in $counts; do run "job-$c" "$work/job-$c"; done
  i=$((i + 1))
done
stats() {  # $1: label -> "best median peak_kib"
  sort -n "$work/$1.runs" | awk '{ s[NR] = $1; if ($2 > k) k = $2 }
    END { printf "%s %s %d\n", s[1], s[int((NR + 1) / 2)], k }'
}
set -- $(stats one)
printf "%-14s best %6.2f s  median %6.2f s  peak RSS %6d MiB\n" "one trace" "$1" "$2" "$(($3 / 1024))"
ob=$1 om=$2 ok=$3
for c in $counts; do
  set -- $(stats "job-$c")
  awk -v ob="$ob" -v om="$om" -v ok="$ok" -v jb="$1" -v jm="$2" -v jk="$3" \
      -v name="$((c * hosts)) traces" 'BEGIN {
    printf "%-14s best %6.2f s  median %6.2f s  peak RSS %6d MiB   / one: time %.2fx (best) %.2fx (median), memory %.2fx\n",
           name, jb, jm, jk / 1024, jb / ob, jm / om, jk / ok }'
  # The same events must give the same I/O figures (the processes differ).
  python3 - "$work/one.json" "$work/job-$c.json" "$(((events / (hosts * c)) * hosts * c))" <<'PY'
import json, sys
one, job = (json.load(open(p)) for p in sys.argv[1:3])
if job["run"]["ops"]["seek"] != int(sys.argv[3]):
    sys.exit("the job's lseeks are not the %s its processes made" % sys.argv[3])
print("  %d processes, %d events (one trace: %d); summary JSON %d bytes" % (
    job["processes"], job["events"], one["events"], len(json.dumps(job))))
PY
done
# The report and the timeline of each directory, once.
for c in $counts; do
  dir="$work/job-$c"
  /usr/bin/time -f "%e %M" -o "$work/time" "$build/tools/dlprof-dump" --format html \
    -o "$work/report.html" "$dir"
  set -- $(cat "$work/time")
  printf "%-14s --format html:     %6.2f s, peak RSS %5d MiB, %9d bytes\n" "$((c * hosts)) traces" \
    "$1" "$(($2 / 1024))" "$(wc -c <"$work/report.html")"
  /usr/bin/time -f "%e %M" -o "$work/time" "$build/tools/dlprof-dump" --format perfetto \
    -o "$work/job.pftrace" "$dir"
  set -- $(cat "$work/time")
  n_events=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["events"])' \
    "$work/job-$c.json")
  size=$(wc -c <"$work/job.pftrace")
  awk -v t="$1" -v k="$2" -v n="$n_events" -v b="$size" -v name="$((c * hosts)) traces" 'BEGIN {
    printf "%-14s --format perfetto: %6.2f s, peak RSS %5d MiB, %d bytes, %.2f bytes/event\n",
           name, t, k / 1024, b, b / n }'
  rm -f "$work/report.html" "$work/job.pftrace"
done
