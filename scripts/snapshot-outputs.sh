#!/usr/bin/env bash
# Records every output of dlprof-dump on a fixed set of real traces, so that a
# restructuring of the reader side can be shown to change no output:
#
#   scripts/snapshot-outputs.sh make-traces DIR        # once, with today's tracer
#   scripts/snapshot-outputs.sh dump DIR before        # with the dlprof-dump before
#   ... change the code, rebuild ...
#   scripts/snapshot-outputs.sh dump DIR after
#   diff -r DIR/before DIR/after                       # nothing: no output changed
#
# The traces: the quickstart example (a loader with worker processes), basic
# POSIX and STDIO programs, forked children, threads, C regions and NVTX
# ranges, call stacks, GPU records through the fake CUPTI, an MPI-IO run under
# mpirun, and a damaged trace (a block cut short). Each trace directory is
# dumped as text, jsonl, chrome and the summary (text and JSON), with stderr
# and the exit status, which say what was damaged.
# BUILD (default build, or $DLPROF_BUILD_DIR) holds the binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${DLPROF_BUILD_DIR:-build}"
mode="${1:?usage: snapshot-outputs.sh make-traces|dump DIR [LABEL]}"
dir="${2:?usage: snapshot-outputs.sh make-traces|dump DIR [LABEL]}"
lib="$PWD/$build/lib/libdlprof.so"
bin="$PWD/$build/tests"

traced() {  # traced NAME CMD...: runs CMD under the tracer into DIR/traces/NAME
  local name="$1"; shift
  DLPROF_DIR="$dir/traces/$name" DLPROF_QUIET=1 LD_PRELOAD="$lib${EXTRA_PRELOAD:+:$EXTRA_PRELOAD}" \
    "$@" >/dev/null 2>"$dir/logs/$name.err" || echo "note: $name exited $?" >&2
}

make_traces() {
  rm -rf "$dir"
  mkdir -p "$dir/traces" "$dir/logs" "$dir/data"
  local data="$dir/data"
  # Each program is a run of its own, named so that the traces are the same
  # from one make-traces to the next.
  export DLPROF_RUN_ID=snapshot
  head -c 1048576 /dev/urandom >"$data/blob.bin"
  traced quickstart /usr/bin/python3 examples/mini_loader.py "$data/loader"
  traced basic_io "$bin/integration/programs/basic_io" "$data"
  traced stdio_all "$bin/integration/programs/stdio_all" "$data"
  traced fork_children "$bin/integration/programs/fork_children" 0 "$data/blob.bin" "$data/blob.bin"
  DLPROF_BUFFER_KB=64 traced threads "$bin/integration/programs/threads_pread" "$data/blob.bin" 4 20000
  mkdir -p "$data/regions"
  for f in a b c; do head -c 65536 /dev/urandom >"$data/regions/$f.bin"; done
  traced regions "$bin/annotations/programs/regions" "$data/regions"
  traced nvtx "$bin/annotations/programs/nvtx_ranges" "$data/blob.bin"
  DLPROF_STACKS=1 traced stacks "$bin/annotations/programs/two_callers" "$data/blob.bin" fork
  if [ -x "$bin/gpu/fake_cuda_app" ] && [ -e "$build/lib/libdlprof_cupti.so" ]; then
    head -c 8192 /dev/zero >"$data/batch.bin"
    EXTRA_PRELOAD="$(ls "$bin"/gpu/fake_cupti/libcupti.so.* | head -1)" \
      traced gpu "$bin/gpu/fake_cuda_app" "$PWD/$build/lib/libdlprof_cupti.so" "$data/batch.bin" normal
  fi
  local mpi_io="$bin/integration/programs/openmpi/mpi_io"
  if [ -x "$mpi_io" ] && command -v mpirun.openmpi >/dev/null; then
    mkdir -p "$data/mpi" "$dir/logs/mpi"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
      OMPI_MCA_btl_vader_single_copy_mechanism=none \
      mpirun.openmpi -n 2 -x DLPROF_DIR="$dir/traces/mpi" -x DLPROF_QUIET=1 -x LD_PRELOAD="$lib" \
      "$mpi_io" "$data/mpi" "$dir/logs/mpi" >/dev/null 2>&1 ||
      echo "note: mpi exited $?" >&2
  fi
  # A damaged trace: the threads' trace (many blocks), its last 100 bytes cut
  # off and a byte in its middle flipped.
  mkdir -p "$dir/traces/damaged"
  local big
  # (traces lie in DLPROF_DIR/<run id>/<host>/)
  big="$(ls -S $(find "$dir/traces/threads" -name '*.dlprof') | head -1)"
  cp "$big" "$dir/traces/damaged/"
  local f="$dir/traces/damaged/$(basename "$big")"
  local size
  size=$(stat -c %s "$f")
  truncate -s $((size - 100)) "$f"
  printf '\xff' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc status=none
  ls "$dir/traces"
}

dump_all() {
  local out="$dir/${1:?a label, e.g. before}"
  local dump="$build/tools/dlprof-dump"
  rm -rf "$out"
  mkdir -p "$out"
  for t in "$dir"/traces/*/; do
    local name
    name="$(basename "$t")"
    for fmt in text jsonl chrome summary-text summary-json; do
      local args=()
      case "$fmt" in
        text|jsonl|chrome) args=(--format "$fmt") ;;
        summary-text) args=(--summary) ;;
        summary-json) args=(--summary --format json) ;;
      esac
      local rc=0
      "$dump" "${args[@]}" "$t" >"$out/$name.$fmt" 2>"$out/$name.$fmt.err" || rc=$?
      echo "$rc" >"$out/$name.$fmt.rc"
    done
  done
  echo "$out: $(ls "$out" | wc -l) files"
}

case "$mode" in
  make-traces) make_traces ;;
  dump) dump_all "${3:-}" ;;
  *) echo "usage: snapshot-outputs.sh make-traces|dump DIR [LABEL]" >&2; exit 2 ;;
esac
