# Shared by bench/callgrind_pread.sh and bench/callgrind_async.sh (sourced):
# reading callgrind's per-thread profiles, $work/NAME.cg-NN.
#
#   callgrind_run NAME TRACED PROG ARGS...   PROG under callgrind, one profile
#                         per thread; TRACED 1: with LD_PRELOAD=$lib, tracing
#                         into $work/trace-NAME
#   ir_of FILE            the profile's total instructions (Ir)
#   thread_file NAME FN   the profile of NAME's thread that ran function FN
#   top FILE N            its top functions, exclusive, in Ir per one of N
#   incl_of FILE FN       the inclusive Ir of function FN (a regular
#                         expression) in the profile, 0 if it is not there
#
# Under valgrind one thread runs at a time: a flusher not scheduled before a
# ring fills leaves the program's thread to drain it (Runtime::OnRingFull,
# TraceSink::TryDrainFromProducer), and what no pass took before the program
# ended is encoded by the exit's final pass (TraceSink::Close) on the thread
# that exits -- in a short run, most of the trace. Both are the flusher's
# work, and the callers count them as such.

callgrind_run() {
  name=$1
  traced=$2
  shift 2
  if [ "$traced" = 1 ]; then
    set -- env DLPROF_DIR="$work/trace-$name" DLPROF_QUIET=1 LD_PRELOAD="$lib" \
      valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$work/$name.cg" "$@"
  else
    set -- valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$work/$name.cg" "$@"
  fi
  "$@" >/dev/null 2>"$work/$name.log"
}
ir_of() { sed -n 's/^summary: //p' "$1"; }
thread_file() {
  grep -l "$2" "$work/$1.cg"-* 2>/dev/null | head -n 1
}
top() {
  callgrind_annotate --inclusive=no "$1" 2>/dev/null |
    awk -v n="$2" '/file:function/ {on = 1; next}
      on && /^-+$/ {if (shown) exit; next}
      on && NF >= 2 {
        gsub(",", "", $1); v = $1 + 0; if (v / n < 2) next
        line = $0; sub(/^ *[0-9,]+ +(\([^)]*\) +)?/, "", line)
        printf "      %7.1f  %s\n", v / n, substr(line, 1, 110); shown++
        if (shown == 12) exit
      }'
}
incl_of() {  # $1: profile, $2: function (a regular expression)
  callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$1" 2>/dev/null |
    awk -v fn="$2" '!done && $0 ~ fn {gsub(",", "", $1); v = $1 + 0; done = 1} END {print v + 0}'
}
