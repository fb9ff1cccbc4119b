#!/usr/bin/env bash
# Builds dlprof and runs the whole test suite (unit + integration) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
cd "${DLPROF_BUILD_DIR:-build}"
ctest --output-on-failure -j 2 -LE sanitize "$@"
