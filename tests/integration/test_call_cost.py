"""What a traced call costs the program's thread, and the flusher an event, in
instructions (issue 33).

bench/pread_overhead makes 100,000 preads of 4 KiB on a worker thread, under
valgrind's callgrind, untraced and traced: the instructions the worker
thread executes per call, traced minus untraced, must stay under a bound, and
so must the tracer's flusher thread's instructions per event.
Instruction counts do not depend on the machine's load, so this is a
regression guard a timing could never be. The trace must hold every call.
With an invariant TSC the traced run takes it (DLPROF_CLOCK=tsc: under
valgrind clock_gettime is not the vDSO's, so its count would not be the
real one); elsewhere clock_gettime, with a bound of its own.
bench/callgrind_pread.sh gives the same figure with the functions behind it.
"""

import glob
import os
import shutil
import subprocess

import dltest

CALLS = 100000
# Measured: 145 with the TSC on the 2-core VM, 173 with clock_gettime (152
# and 180 before the cached &errno and the null slot; 179 before issue 33);
# the target is 60. The bounds leave about 10 %.
BOUND_TSC = 160
BOUND_CLOCK_GETTIME = 190
# The flusher's instructions per event in the same traced run: 194-207 with
# the TSC, 174-194 with clock_gettime (241 and 211 before format version 3's
# timings, session 17; 303 and 252 before zstd was given the runs, session
# 16). Its zstd share moves with the timings' entropy, by about 5 % from run
# to run here, more where a pread takes longer under valgrind, so the bounds
# leave 20 %: a guard against a gross regression (zstd's match finder back),
# not against a few percent. The target is 200.
FLUSHER_BOUND_TSC = 245
FLUSHER_BOUND_CLOCK_GETTIME = 230
PROG = os.environ.get("DLPROF_PREAD_OVERHEAD", "")


def drained_instructions(profile, text):
    """The instructions a thread's profile spent in TraceSink::TryDrainFromProducer,
    callees included (0 when it never ran there)."""
    if "TryDrainFromProducer" not in text:
        return 0
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--auto=no",
                          "--threshold=100", profile],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if "TryDrainFromProducer" in line:
            return int(line.split()[0].replace(",", ""))
    return 0


class CallCostTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        if shutil.which("valgrind") is None:
            self.skipTest("no valgrind")
        if not PROG or not os.path.exists(PROG):
            self.skipTest("bench/pread_overhead not built")
        self.file = os.path.join(self.data, "data.bin")
        subprocess.run([PROG, "--file", self.file, "--create", "--file-mb", "8"], check=True,
                       stdout=subprocess.DEVNULL)

    def instructions(self, name, env):
        """Instructions of the worker thread and, traced, of the flusher, and
        whether the worker drained the rings itself."""
        out = os.path.join(self.tmp, name + ".cg")
        cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes",
               "--callgrind-out-file=" + out, PROG, "--file", self.file, "--threads", "1",
               "--iters", str(CALLS), "--warmup", "0", "--clock-iters", "10"]
        p = dltest.run(cmd, env, timeout=110)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        found = {}
        for part in glob.glob(out + "-*"):
            with open(part, errors="replace") as f:
                text = f.read()
            for thread, marker in (("worker", "run_worker"), ("flusher", "TraceSink::Loop")):
                if marker in text:
                    found[thread] = next(int(line.split()[1]) for line in text.splitlines()
                                         if line.startswith("summary:"))
                    if thread == "worker":
                        found["drained"] = drained_instructions(part, text)
        self.assertIn("worker", found, "no profile of the worker thread in %s" % out)
        return found

    def test_added_instructions_per_traced_pread(self):
        tsc = dltest.invariant_tsc()
        untraced = self.instructions("untraced", dltest.base_env())["worker"]
        env = dltest.traced_env(self.traces, {"DLPROF_CLOCK": "tsc" if tsc else None})
        traced = self.instructions("traced", env)
        # Under valgrind one thread runs at a time. Where the flusher was not
        # scheduled before the worker's ring filled, the worker drained the
        # rings itself (Runtime::OnRingFull, as a starved flusher calls for):
        # that encoding is the flusher's work, done on another thread.
        if traced["drained"]:
            print("the worker drained the rings itself: %d instructions moved to the flusher's"
                  % traced["drained"])
            traced["worker"] -= traced["drained"]
            traced["flusher"] = traced.get("flusher", 0) + traced["drained"]
        added = (traced["worker"] - untraced) / CALLS
        bound = BOUND_TSC if tsc else BOUND_CLOCK_GETTIME
        clock = "tsc" if tsc else "clock_gettime"
        print("instructions added per traced pread: %.1f (bound %d, %s)" % (added, bound, clock))
        self.assertLessEqual(added, bound)
        trace = self.decode(keep=lambda e: e["name"] in ("pread", "pread64")
                            and e.get("path") == self.file)
        self.assertGreaterEqual(len(trace.events), CALLS)
        self.assertIn("flusher", traced, "no profile of the flusher thread")
        flusher = traced["flusher"] / len(trace.events)
        flusher_bound = FLUSHER_BOUND_TSC if tsc else FLUSHER_BOUND_CLOCK_GETTIME
        print("flusher instructions per event: %.1f (bound %d, %s)"
              % (flusher, flusher_bound, clock))
        self.assertLessEqual(flusher, flusher_bound)


if __name__ == "__main__":
    dltest.main()
