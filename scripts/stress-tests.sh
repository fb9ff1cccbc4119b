#!/usr/bin/env bash
# Runs the integration-type tests N times on a loaded machine and reports
# how often each one failed (issue 24): a test that passes on a quiet
# machine but not on a busy CI runner depends on timing.
#
#   scripts/stress-tests.sh N [BUILD_DIR] [-L LABEL_REGEX] [-R TEST_REGEX] [--load K]
#
# BUILD_DIR defaults to $DLPROF_BUILD_DIR, else build (built already). The
# tests are those labelled integration, reliability or annotations (see
# tests/*/CMakeLists.txt), minus the sanitizer runs; -L and -R narrow or
# change that. While they run, K CPU-bound processes (default: as many as
# cores) keep every core busy; the script starts them and kills them (by
# pid) when it ends, however it ends. Each run's ctest log of a failing run
# is kept in BUILD_DIR/stress/, and a failed Python test's files and traces
# in BUILD_DIR/stress/kept/ (DLPROF_TEST_KEEP_FAILED, tests/dltest). Exit
# status 1 when any test failed.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
N=""
BUILD="${DLPROF_BUILD_DIR:-build}"
LABELS="integration|reliability|annotations"
REGEX=""
LOAD="$(nproc)"
while [ $# -gt 0 ]; do
  case "$1" in
    -L) LABELS="$2"; shift ;;
    -R) REGEX="$2"; shift ;;
    --load) LOAD="$2"; shift ;;
    -h|--help) usage ;;
    *)
      if [ -z "$N" ]; then N="$1"; else BUILD="$1"; fi ;;
  esac
  shift
done
[[ "$N" =~ ^[0-9]+$ ]] && [ "$N" -gt 0 ] || usage
[[ "$LOAD" =~ ^[0-9]+$ ]] || usage
if [ ! -f "$BUILD/CTestTestfile.cmake" ]; then
  echo "stress-tests.sh: $BUILD is not a configured build (scripts/build.sh first)" >&2
  exit 2
fi

# The load: busy loops, one per core, nothing else. Killed on every exit.
hogs=()
stop_hogs() {
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${hogs[@]}"; do wait "$pid" 2>/dev/null || true; done
  hogs=()
}
trap stop_hogs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq 1 "$LOAD"); do
  bash -c 'while :; do :; done' &
  hogs+=("$!")
done

select_args=(-L "$LABELS" -LE sanitize)
[ -n "$REGEX" ] && select_args+=(-R "$REGEX")
tests=$(ctest --test-dir "$BUILD" -N "${select_args[@]}" | sed -n 's/^ *Test *#[0-9]*: *//p')
[ -n "$tests" ] || { echo "stress-tests.sh: no test selected" >&2; exit 2; }
declare -A failures
for t in $tests; do failures[$t]=0; done
mkdir -p "$BUILD/stress"
export DLPROF_TEST_KEEP_FAILED="${DLPROF_TEST_KEEP_FAILED:-$(cd "$BUILD" && pwd)/stress/kept}"
echo "stress-tests.sh: $(echo "$tests" | wc -w) tests x $N runs in $BUILD, $LOAD CPU-bound processes on $(nproc) cores"

failed_runs=0
for i in $(seq 1 "$N"); do
  start=$(date +%s)
  rm -f "$BUILD/Testing/Temporary/LastTestsFailed.log"
  set +e
  ctest --test-dir "$BUILD" "${select_args[@]}" > "$BUILD/stress/run-$i.log" 2>&1
  rc=$?
  set -e
  failed=""
  if [ -f "$BUILD/Testing/Temporary/LastTestsFailed.log" ]; then
    # Lines "NN:name".
    failed=$(cut -d: -f2- "$BUILD/Testing/Temporary/LastTestsFailed.log")
  fi
  if [ "$rc" -ne 0 ] && [ -z "$failed" ]; then failed="(ctest-exit-$rc)"; failures[$failed]=0; fi
  for t in $failed; do failures[$t]=$(( ${failures[$t]:-0} + 1 )); done
  if [ -n "$failed" ]; then
    failed_runs=$(( failed_runs + 1 ))
    cp "$BUILD/Testing/Temporary/LastTest.log" "$BUILD/stress/run-$i-LastTest.log" 2>/dev/null || true
  else
    rm -f "$BUILD/stress/run-$i.log"
  fi
  echo "stress-tests.sh: run $i/$N: $(( $(date +%s) - start )) s, failed: ${failed:-none}" | tr '\n' ' '
  echo
done

echo "stress-tests.sh: failures per test over $N runs under load $LOAD:"
total=0
for t in $(printf '%s\n' "${!failures[@]}" | sort); do
  printf '  %-40s %d/%d\n' "$t" "${failures[$t]}" "$N"
  total=$(( total + failures[$t] ))
done
echo "stress-tests.sh: $failed_runs of $N runs had a failure ($total test failures in all)"
[ "$total" -eq 0 ]
