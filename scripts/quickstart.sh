#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a first trace: installs the
# packages, builds, traces the built-in example (examples/train.py: a small
# PyTorch training loop on the CPU, a DataLoader with 2 worker processes over
# a few hundred files, with no `import dlprof`), and prints what was recorded:
# the batch wait is measured without any change to the script.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh

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
