#!/usr/bin/env bash
# What the MPI clock measurement (lib/intercept/mpi_clock.cc) costs: N ranks
# under Open MPI, each in a time namespace of its own (N clock domains: N-1
# measuring ranks, each 10 round trips at MPI_Init and again at MPI_Finalize),
# run REPS times each with DLPROF_MPI_CLOCK=0 and =1, alternating. Prints
# rank 0's MPI_Finalize time and the job's wall time per run, and the error
# bounds the measurements gave. Needs root (unshare --time) and mpicc.openmpi.
#
#   bench/mpi_clock_sync.sh [BUILD] [N] [REPS]
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
n="${2:-8}"
reps="${3:-3}"
work="$(mktemp -d /tmp/dlprof-mpiclock.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mpicc.openmpi -O2 -o "$work/mpi_finalize" "$(dirname "$0")/mpi_finalize.c"
cat > "$work/wrap.sh" <<WRAP
#!/bin/sh
exec unshare --time --monotonic \$((OMPI_COMM_WORLD_RANK * 1000 + 1)) --fork \\
  env LD_PRELOAD=$build/lib/libdlprof.so DLPROF_DIR=$work/traces DLPROF_QUIET=1 "\$@"
WRAP
chmod +x "$work/wrap.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
for ((i = 0; i < reps; i++)); do
  for clock in 0 1; do
    rm -rf "$work/traces"
    start=$(date +%s%N)
    out=$(mpirun.openmpi --oversubscribe --mca btl self,vader -x DLPROF_MPI_CLOCK=$clock \
      -n "$n" "$work/wrap.sh" "$work/mpi_finalize")
    end=$(date +%s%N)
    echo "DLPROF_MPI_CLOCK=$clock  $out  wall $(( (end - start) / 1000000 )) ms"
  done
done
"$build/tools/dlprof-dump" --summary --format json "$work/traces" | python3 -c '
import json, sys
c = json.load(sys.stdin)["clocks"]
print("last run:", c["method"], "error bounds (ns):",
      sorted(d["error_ns"] for d in c["domains"] if not d["reference"]))'
