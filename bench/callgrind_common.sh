# Shared by bench/callgrind_pread.sh and bench/callgrind_async.sh (sourced):
# reading callgrind's per-thread profiles, $work/NAME.cg-NN.
#
#   callgrind_run NAME TRACED PROG ARGS...   PROG under callgrind, one profile
#                         per thread; TRACED 1: with LD_PRELOAD=$lib, tracing
#                         into $work/trace-NAME
#   ir_of FILE            the profile's total instructions (Ir)
#   thread_file NAME FN   the profile of NAME's thread that ran function FN
#   top FILE N            its top functions, exclusive, in Ir per one of N

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
