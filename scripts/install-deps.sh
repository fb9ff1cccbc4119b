#!/usr/bin/env bash
# Installs the Debian 12 packages dlprof builds and tests with. Nothing else
# is downloaded. Skips apt-get when everything is already there.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libzstd-dev libunwind-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy python3-torch
  python3-pandas  # dlprof.read_events and friends (python/dlprof/traces.py)
  libopenmpi-dev openmpi-bin python3-mpi4py
  mpich libmpich-dev  # the MPICH family (Cray MPICH, Intel MPI); tests run under both
  clang libclang-rt-14-dev  # the trace fuzzer (libFuzzer, ASan, UBSan)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
