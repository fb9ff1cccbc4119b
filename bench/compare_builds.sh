#!/bin/sh
# Before/after figures of a change to the traced call, in one run: the
# callgrind counts of each build (immune to load), then overhead.py's
# timings with the builds alternating, so the machine's load hits both.
#
#   bench/compare_builds.sh BEFORE_BUILD AFTER_BUILD [ROUNDS [ITERS]]
#
# The after build runs twice per round: with DLPROF_CLOCK=auto (this
# machine's choice) and with DLPROF_CLOCK=tsc (the TSC forced, where it is
# invariant: a VM whose clocksource is kvm-clock takes clock_gettime on
# auto). Each overhead.py run is --reps 3; every number it prints is kept
# under $OUT (default ./compare-out) as JSON, one file per run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
before=$1
after=$2
rounds=${3:-2}
iters=${4:-100000}
out=${OUT:-compare-out}
mkdir -p "$out"
echo "== $(date -u +%FT%TZ), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== callgrind (bench/callgrind_pread.sh, 100000 calls)"
for b in before after after-tsc; do
  case $b in
    before) dir=$before; clock=auto;;
    after) dir=$after; clock=auto;;
    after-tsc) dir=$after; clock=tsc;;
  esac
  echo "-- $b ($dir, DLPROF_CLOCK=$clock)"
  DLPROF_CLOCK=$clock "$here/callgrind_pread.sh" "$dir" 100000 | sed -n 2,5p
done
echo "== overhead.py --only overhead --reps 3 --iters $iters, $rounds rounds, builds alternating"
r=1
while [ "$r" -le "$rounds" ]; do
  for b in before after after-tsc; do
    case $b in
      before) dir=$before; clock=auto;;
      after) dir=$after; clock=auto;;
      after-tsc) dir=$after; clock=tsc;;
    esac
    echo "-- round $r: $b, load $(cut -d' ' -f1-3 /proc/loadavg)"
    DLPROF_CLOCK=$clock python3 "$here/overhead.py" --build "$dir" --only overhead --reps 3 \
      --iters "$iters" --json "$out/$b-$r.json" | sed -n '/^== overhead/,$p'
  done
  r=$((r + 1))
done
echo "== $(date -u +%FT%TZ), load: $(cut -d' ' -f1-3 /proc/loadavg)"
