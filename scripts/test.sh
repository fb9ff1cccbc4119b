#!/usr/bin/env bash
# Installs what the tests need, builds dlprof with its tests and runs the
# whole test suite (unit + integration) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${DLPROF_BUILD_DIR:-build}"
ctest --output-on-failure -j 2 -LE sanitize "$@"
