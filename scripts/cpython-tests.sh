#!/usr/bin/env bash
# CPython's own regression tests with and without the tracer, compared test
# by test (tests/cpython/cpython_tests.py; docs/RELIABILITY.md).
#
#   scripts/cpython-tests.sh [--short | --full] [MODULE...] [--keep DIR]
#
# --full (the default without modules): the 45 modules of issue 38, about
# 35 minutes on 2 cores. --short: the list ctest runs (ctest -L cpython).
# Uses build/ (or $DLPROF_BUILD_DIR) and Debian's python3 with
# libpython3.11-testsuite (scripts/install-deps.sh). Exit status 1 when a
# module differs.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${DLPROF_BUILD_DIR:-build}"
exec python3 tests/cpython/cpython_tests.py --lib "$build_dir/lib/libdlprof.so" \
  --dump "$build_dir/tools/dlprof-dump" "$@"
