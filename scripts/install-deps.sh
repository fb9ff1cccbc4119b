#!/usr/bin/env bash
# Installs the Debian 12 packages dlprof builds and tests with. Nothing else
# is downloaded. Skips apt-get when everything is already there.
#
#   scripts/install-deps.sh          everything: the main job and the tests
#                                    (scripts/test.sh, .ci/run)
#   scripts/install-deps.sh --main   what the main job needs: the tracer,
#                                    dlprof-dump, the launcher, the Python
#                                    package, the report's charting library and
#                                    the example's PyTorch (scripts/quickstart.sh)
#   scripts/install-deps.sh --dlio   the main job and what bench/dlio/run_dlio.py
#                                    needs to run DLIO under dlprof (DLIO's
#                                    Python dependencies that Debian packages,
#                                    Open MPI)
#   scripts/install-deps.sh --build  what building the main job needs (the
#                                    quickstart installs the rest meanwhile);
#                                    the main job's other packages download
#                                    while it installs, for --main to unpack
set -euo pipefail

build_packages=(
  build-essential cmake pkg-config
  libzstd-dev libunwind-dev
  libisal-dev  # dlprof-dump --format perfetto deflates its packets (Intel ISA-L's igzip)
  python3  # the Python bootstrap is byte-compiled at build time
)
main_packages=(
  python3-numpy
  python3-pandas  # dlprof.read_events and friends (python/dlprof/traces.py)
  python3-torch  # examples/train.py, which the quickstart traces
)
test_packages=(
  zstd  # tests/integration/test_perfetto.py decompresses zstd chunks with the zstd tool
  zlib1g-dev  # tests/unit/perfetto_compress_test.cc inflates them with another library
  protobuf-compiler  # protoc: tests/integration/test_perfetto*.py decode Perfetto traces
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-dask python3-distributed  # dlprof.dask (python/dlprof/dask.py) and its tests
  libopenmpi-dev openmpi-bin python3-mpi4py
  mpich libmpich-dev  # the MPICH family (Cray MPICH, Intel MPI); tests run under both
  faketime  # test_mpi_clocks.py: a rank whose wall clock is 5 s off (libfaketime)
  valgrind  # test_call_cost.py and bench/callgrind_pread.sh: a traced call's instructions
  clang libclang-rt-14-dev  # the trace fuzzer (libFuzzer, ASan, UBSan)
  chromium-headless-shell  # tests/integration/test_html_report.py loads the HTML report
  libpython3.11-testsuite  # CPython's own tests, traced and untraced (scripts/cpython-tests.sh)
  python3-torchvision python3-pil  # test_loader_inside.py: torchvision's transforms, PIL's decode
  python3-lmdb  # tests/integration/test_map_reads.py: an LMDB database read at random (issue 49)
  # Asynchronous I/O (tests/integration/test_async_io.py, bench/fio_async.sh): fio's
  # io_uring, libaio and posixaio engines, and liburing programs of the tests' own
  fio liburing-dev libaio-dev
)
dlio_packages=(
  # bench/dlio/run_dlio.py: DLIO's dependencies from Debian (hydra-core and
  # pydftracer are not packaged: bench/dlio/standins stands in for them;
  # python3-pil only for DLIO's png and jpeg formats, which the harness skips)
  python3-h5py python3-omegaconf python3-psutil python3-yaml
  python3-mpi4py openmpi-bin  # its mpirun shape, and DLIO imports mpi4py in every run
)
packages=("${build_packages[@]}")
mode="${1:-}"
case "$mode" in
  --build) ;;
  --main) packages+=("${main_packages[@]}") ;;
  --dlio) packages+=("${main_packages[@]}" "${dlio_packages[@]}") ;;
  "") packages+=("${main_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: scripts/install-deps.sh [--build|--main|--dlio]" >&2; exit 2 ;;
esac

# The HTML report's charting library (tools/dump/report/package.json: Chart.js
# and its plugins), from the npm registry with the machine's Node.js, as the
# lock file pins it; CMake embeds it into dlprof-dump. Without npm the build
# still works and `dlprof-dump --format html` says what is missing. Skipped
# when node_modules already holds every package at the version the lock file
# pins (npm ci would delete it and fetch it again: scripts/test.sh runs this
# after scripts/quickstart.sh did).
report_library_current() {
  python3 - "$1" <<'PY'
import json, os, sys
d = sys.argv[1]
try:
    with open(os.path.join(d, "package-lock.json")) as f:
        packages = json.load(f)["packages"]
except (OSError, ValueError, KeyError):
    sys.exit(1)
for path, p in packages.items():
    try:
        with open(os.path.join(d, path, "package.json")) as f:
            current = path == "" or json.load(f).get("version") == p.get("version")
    except (OSError, ValueError):
        current = False
    if not current:
        sys.exit(1)
PY
}
install_report_library() {
  local dir
  dir="$(dirname "$0")/../tools/dump/report"
  if report_library_current "$dir"; then
    return 0
  fi
  if ! command -v npm >/dev/null; then
    echo "install-deps: npm not found: dlprof-dump --format html will be unavailable" >&2
    return 0
  fi
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
}

not_installed() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(not_installed "${packages[@]}")
mapfile -t main_missing < <(not_installed "${main_packages[@]}")

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# --build downloads the main job's packages (PyTorch: 300 of them) into a
# directory of their own while dpkg installs the compiler, which the
# archive's lock would otherwise keep from running at once; --main then
# unpacks them from there (waiting for the download to end) and deletes it.
prefetch=/var/cache/apt/dlprof-main
prefetch_main() {
  $SUDO mkdir -p "$prefetch/partial"
  $SUDO flock "$prefetch.lock" apt-get install -d -y -qq --no-install-recommends \
    -o Dir::Cache::Archives="$prefetch" "${main_missing[@]}" >/dev/null 2>&1 || true
}
apt_options=(-o Dpkg::Options::=--force-unsafe-io)
if [ "$mode" = --main ] && [ -d "$prefetch" ]; then
  $SUDO flock "$prefetch.lock" true
  apt_options+=(-o Dir::Cache::Archives="$prefetch")
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  install_report_library
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
if [ "$mode" = --build ] && [ ${#main_missing[@]} -gt 0 ]; then
  prefetch_main &
fi
# force-unsafe-io: dpkg unpacks without an fsync per file (as Debian's own
# container images do); an install cut short by a power loss is redone by
# running this again.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  "${apt_options[@]}" "${missing[@]}"
if [ "$mode" = --main ]; then $SUDO rm -rf "$prefetch" "$prefetch.lock"; fi
install_report_library
