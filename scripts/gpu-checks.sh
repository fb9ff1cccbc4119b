#!/usr/bin/env bash
# The checks that need a GPU machine, as one script for the device tool's
# short loan (15 minutes a session, start-up included).
#
#   scripts/gpu-checks.sh pack [BUILD]     here: copy what the checks need from
#                                          BUILD (default build) into build-gpu/,
#                                          debug info stripped (carry it)
#   scripts/gpu-checks.sh run OUT [SECS]   there: run the checks, logs in OUT;
#                                          the benchmark gets what is left of SECS
#
# The device tool brings back only a few files: run it as
#   scripts/gpu-checks.sh run /tmp/gpu 420; tar czf $OUT/gpu.tgz -C /tmp gpu
#
# What runs (each step bounded, its log in OUT/NN-name.log, its exit status in
# OUT/summary.txt): the machine's facts (GPU, clocksource, TSC flags), the TSC
# calibration unit test, the clock integration test (the default clock is the
# TSC where the clocksource is tsc), the CUDA program (on the TSC, forced)
# and the PyTorch step (on the default clock)
# under LD_PRELOAD, GPUDirect Storage against the real libcufile
# (tests/gpu/gds_check.py), the per-call overhead with each clock, and
# bench/gpu_overhead.py in its four compared configurations.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)

pack() {
  local b=${1:-build} g=$here/build-gpu
  rm -rf "$g" && mkdir -p "$g"/{lib,tools,bench,tests/gpu,tests/unit,tests/integration}
  cp -a "$b"/lib/libdlprof.so "$b"/lib/libdlprof_cupti.so "$b"/lib/libdlprof_reader.so \
        "$b"/lib/dlprof-python "$g"/lib/
  cp -a "$b"/tools/dlprof-dump "$b"/tools/dlprof "$g"/tools/
  cp -a "$b"/python "$g"/
  cp "$b"/bench/{pread_overhead,maxrss,trace_columns} "$g"/bench/
  cp "$b"/tests/gpu/{gpu_io_kernels,plugin_load} "$g"/tests/gpu/
  cp "$b"/tests/unit/tsc_clock_test "$g"/tests/unit/
  cp -a "$b"/tests/integration/programs "$g"/tests/integration/
  cp "$(ldconfig -p | awk '/libisal.so.2 /{print $NF; exit}')" "$g"/
  find "$g" -name CMakeFiles -prune -exec rm -rf {} +
  find "$g" -type f \( -name '*.so*' -o -perm -u+x \) -exec strip --strip-debug {} + 2>/dev/null
  du -sh "$g"
}

step() {  # step NAME SECONDS COMMAND...: bounded, logged, its status summed up
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout -k 5 "$secs" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $((SECONDS - t0))s" | tee -a "$out/summary.txt"
}

run() {
  out=$1; local budget=${2:-480} g=$here/build-gpu
  mkdir -p "$out"
  export LD_LIBRARY_PATH=$g${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export DLPROF_LIB=$g/lib/libdlprof.so DLPROF_DUMP=$g/tools/dlprof-dump \
         DLPROF_CUPTI_PLUGIN=$g/lib/libdlprof_cupti.so \
         DLPROF_GPU_PROGRAM=$g/tests/gpu/gpu_io_kernels \
         DLPROF_PLUGIN_LOAD=$g/tests/gpu/plugin_load \
         DLPROF_TEST_BIN=$g/tests/integration/programs \
         DLPROF_PYTHON_DIR=$g/python DLPROF_SYSTEM_PYTHON=$(command -v python3) \
         PYTHONPATH=$here/tests:$g/python PYTHONDONTWRITEBYTECODE=1
  { nvidia-smi -L; nproc; uname -r
    cat /sys/devices/system/clocksource/clocksource0/current_clocksource
    grep -m1 -o -w -E 'constant_tsc|nonstop_tsc' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
    grep -m1 'model name' /proc/cpuinfo
    python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
    ldconfig -p | grep -i cufile; find / -name 'libcufile.so*' -not -path '/proc/*' 2>/dev/null | head
  } > "$out/00-facts.log" 2>&1
  local start=$SECONDS
  step 01-tsc_clock_test 60 "$g"/tests/unit/tsc_clock_test
  (cd "$here"/tests/integration && step 02-test_clock 120 python3 -m unittest -v test_clock)
  (cd "$here"/tests/gpu && DLPROF_CLOCK=tsc step 03-cuda_program 150 python3 gpu_test.py cuda_program)
  (cd "$here"/tests/gpu && step 04-torch_step 150 python3 gpu_test.py torch_step)
  # libcufile looks up the disk's udev entry (ID_FS_USAGE) even in forced
  # compatibility mode, and a VM without udev has none: cuFileHandleRegister
  # then fails with 5027. Written here, on the borrowed machine only.
  local dev
  dev=$(python3 -c 'import os; d = os.stat("/tmp").st_dev; print("%d:%d" % (os.major(d), os.minor(d)))')
  if [ ! -e "/run/udev/data/b$dev" ]; then
    mkdir -p /run/udev/data && printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=%s\n' \
      "$(findmnt -no FSTYPE -T /tmp)" > "/run/udev/data/b$dev"
  fi
  step 05-gds_check 150 python3 "$here"/tests/gpu/gds_check.py "$g" --python python3
  for clock in tsc clock_gettime; do
    DLPROF_CLOCK=$clock step 06-overhead-$clock 100 python3 "$here"/bench/overhead.py \
      --build "$g" --only overhead,size --reps 5 --iters 200000 \
      --json "$out/overhead-$clock.json"
  done
  local left=$((budget - (SECONDS - start)))
  step 07-gpu_overhead $((left > 60 ? left : 60)) python3 "$here"/bench/gpu_overhead.py \
    --build "$g" --python python3 --configs plain,profiler,default --reps 2 --focus-reps 3 \
    --epochs 2 --json "$out/gpu_overhead.jsonl"
}

case ${1:-} in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) sed -n '2,17p' "$0"; exit 2 ;;
esac
