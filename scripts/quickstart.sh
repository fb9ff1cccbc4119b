#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a first trace: installs the
# packages, builds, traces the built-in example (a data loader with worker
# processes reading a small data set), and prints what was recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh

work="$(mktemp -d /tmp/dlprof-quickstart.XXXXXX)"
echo
echo "== tracing examples/mini_loader.py (data in $work/data, traces in $work/traces)"
DLPROF_DIR="$work/traces" LD_PRELOAD="$PWD/build/lib/libdlprof.so" \
  /usr/bin/python3 examples/mini_loader.py "$work/data"

echo
echo "== first events (build/tools/dlprof-dump $work/traces | head -25)"
build/tools/dlprof-dump "$work/traces" | head -25 || true
echo
echo "== what was recorded"
build/tools/dlprof-dump --summary "$work/traces"
