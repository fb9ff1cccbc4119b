# Shared by bench/callgrind_pread.sh and bench/callgrind_async.sh (sourced):
# reading callgrind's per-thread profiles, $work/NAME.cg-NN.
#
#   ir_of FILE            the profile's total instructions (Ir)
#   thread_file NAME FN   the profile of NAME's thread that ran function FN
#   top FILE N            its top functions, exclusive, in Ir per one of N

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
