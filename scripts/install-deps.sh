#!/usr/bin/env bash
# Installs the Debian 12 packages dlprof builds and tests with. Nothing else
# is downloaded. Skips apt-get when everything is already there.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libzstd-dev libunwind-dev
  zstd  # tests/integration/test_perfetto.py decompresses zstd chunks with the zstd tool
  libisal-dev  # dlprof-dump --format perfetto deflates its packets (Intel ISA-L's igzip)
  zlib1g-dev  # tests/unit/perfetto_compress_test.cc inflates them with another library
  protobuf-compiler  # protoc: tests/integration/test_perfetto.py decodes Perfetto traces
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy python3-torch
  python3-pandas  # dlprof.read_events and friends (python/dlprof/traces.py)
  python3-dask python3-distributed  # dlprof.dask (python/dlprof/dask.py) and its tests
  libopenmpi-dev openmpi-bin python3-mpi4py
  mpich libmpich-dev  # the MPICH family (Cray MPICH, Intel MPI); tests run under both
  faketime  # test_mpi_clocks.py: a rank whose wall clock is 5 s off (libfaketime)
  valgrind  # test_call_cost.py and bench/callgrind_pread.sh: a traced call's instructions
  clang libclang-rt-14-dev  # the trace fuzzer (libFuzzer, ASan, UBSan)
  chromium-headless-shell  # tests/integration/test_html_report.py loads the HTML report
  libpython3.11-testsuite  # CPython's own tests, traced and untraced (scripts/cpython-tests.sh)
)

# The HTML report's charting library (tools/dump/report/package.json: Chart.js
# and its plugins), from the npm registry with the machine's Node.js, as the
# lock file pins it; CMake embeds it into dlprof-dump. Without npm the build
# still works and `dlprof-dump --format html` says what is missing.
install_report_library() {
  local dir
  dir="$(dirname "$0")/../tools/dump/report"
  if ! command -v npm >/dev/null; then
    echo "install-deps: npm not found: dlprof-dump --format html will be unavailable" >&2
    return 0
  fi
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  install_report_library
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_report_library
