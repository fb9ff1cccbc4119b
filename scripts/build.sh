#!/usr/bin/env bash
# Configures and builds dlprof into build/ (or $DLPROF_BUILD_DIR): with its
# tests and benchmarks unless DLPROF_BUILD_TESTS=OFF or DLPROF_BUILD_BENCH=OFF
# (scripts/quickstart.sh builds the main job alone; scripts/test.sh then adds
# the tests to the same build directory).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${DLPROF_BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${DLPROF_BUILD_TYPE:-RelWithDebInfo}" \
  -DDLPROF_BUILD_TESTS="${DLPROF_BUILD_TESTS:-ON}" -DDLPROF_BUILD_BENCH="${DLPROF_BUILD_BENCH:-ON}" \
  >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
