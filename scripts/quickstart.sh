#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a first trace: installs the
# packages, builds, traces the built-in example (examples/train.py: a small
# PyTorch training loop on the CPU, a DataLoader with 2 worker processes over
# a few hundred files, with no `import dlprof`), and prints what was recorded:
# the batch wait is measured without any change to the script.
#
# It installs and builds only what this needs (the tracer, dlprof-dump, the
# launcher, the Python package, the report's library; no tests, no
# benchmarks): scripts/test.sh installs and builds the rest. The packages the
# build does not need (PyTorch and the Python side: most of them) install
# while it compiles.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --build
deps_log="$(mktemp /tmp/dlprof-quickstart-deps.XXXXXX)"
echo "install-deps: PyTorch and the Python packages install meanwhile (log: $deps_log)"
scripts/install-deps.sh --main >"$deps_log" 2>&1 &
deps=$!
# A release build: the same code as the tests' (-O2) without its debug
# information, about 30 % of the build's time (CMakeLists.txt). It
# yields the processors to dpkg, the longer of the two: unpacking PyTorch
# takes most of a core for a minute and a half.
if ! DLPROF_BUILD_TYPE=Release DLPROF_BUILD_TESTS=OFF DLPROF_BUILD_BENCH=OFF \
    nice -n 10 scripts/build.sh; then
  wait "$deps" || true  # never leave dpkg half done
  exit 1
fi
if ! wait "$deps"; then
  cat "$deps_log" >&2
  echo "quickstart: installing the packages failed (above)" >&2
  exit 1
fi
cat "$deps_log"

work="$(mktemp -d /tmp/dlprof-quickstart.XXXXXX)"
echo
echo "== tracing examples/train.py (data in $work/data, traces in $work/traces)"
# libdlprof.so puts its Python bootstrap (build/lib/dlprof-python) first on
# PYTHONPATH itself: nothing else to set, nothing to change in the script.
DLPROF_DIR="$work/traces" LD_PRELOAD="$PWD/build/lib/libdlprof.so" \
  /usr/bin/python3 examples/train.py "$work/data"

echo
echo "== first events (build/tools/dlprof-dump $work/traces | head -25)"
build/tools/dlprof-dump "$work/traces" | head -25 || true
echo
echo "== what was recorded"
build/tools/dlprof-dump --summary "$work/traces"
