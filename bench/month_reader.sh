#!/bin/sh
# What reading a long bounded run costs the reader (issue 53: "always on for
# month-long jobs"): a real DLPROF_KEEP=5s run of a DataLoader loop
# (tests/integration/scripts/torch_keep.py, 2 workers forked each pass), its
# counters files stretched by bench/counters_stretch to an hour, a day and
# a week, then `dlprof-dump --summary --format json` over each: its time
# and peak RSS (bench/maxrss), the counters' bytes, and the whole run's
# batch wait split (every copy is the same pass: each split should be the
# source run's, within its standard errors).
#
#   bench/month_reader.sh [BUILD_DIR [DURATIONS_H]]
#
# DURATIONS_H defaults to "1 24 168". Prints two lines per duration.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
durations=${2:-1 24 168}
stretch=$build/bench/counters_stretch
[ -x "$stretch" ] || { echo "month_reader.sh: build first ($stretch)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-month.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/data"
"$build/tools/dlprof" run --keep 5s --dir "$work/src" --no-summary --quiet -- /usr/bin/python3 \
  "$here/../tests/integration/scripts/torch_keep.py" many "$work/data" "$work/truth.json" 12 800 \
  >/dev/null
# The run's span, from its counters: each copy follows the one before.
span=$("$build/tools/dlprof-dump" --summary --format json "$work/src" |
  python3 -c 'import json, sys; w = json.load(sys.stdin)["whole_run"]; print(w["end_ns"] - w["start_ns"])')
echo "source: $(find "$work/src" -name '*.dlcount' | wc -l) processes, $((span / 1000000)) ms"
for hours in $durations; do
  copies=$(( (hours * 3600 * 1000000000 + span - 1) / span ))
  rm -rf "$work/long" && cp -r "$work/src" "$work/long"
  for f in $(find "$work/long" -name '*.dlcount'); do
    "$stretch" "$f" "$f.new" "$copies" "$span" >/dev/null && mv "$f.new" "$f"
  done
  bytes=$(find "$work/long" -name '*.dlcount' -printf '%s\n' | awk '{s += $1} END {print s}')
  start=$(date +%s.%N)
  "$build/bench/maxrss" "$work/rss" "$build/tools/dlprof-dump" --summary --format json "$work/long" \
    >"$work/summary.json"
  rss=$(cat "$work/rss")
  end=$(date +%s.%N)
  awk -v h="$hours" -v b="$bytes" -v r="${rss:-0}" -v s="$start" -v e="$end" 'BEGIN {
    printf "%5d h: counters %8.1f MB, reader %6.1f s, peak RSS %7.1f MB\n", h, b / 1e6, e - s, r / 1024
  }'
  # The split, which every copy shares (the truth: the source run's).
  python3 - "$work/summary.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["whole_run"]["causes"]
parts = ("reading", "preprocessing", "handover", "worker_startup")
total = sum(c[p + "_ns"] for p in parts) + c["unsplit_ns"]
print("         " + ", ".join("%s %.3f%% (SE %.3f%%)" % (p, 100 * c[p + "_ns"] / total,
                                                       100 * c[p + "_error_ns"] / total)
                               for p in parts) +
      "; one in %d kept, passes one in %d" % (c["thinned_one_in"], c.get("passes_one_in", 1)))
PY
done
