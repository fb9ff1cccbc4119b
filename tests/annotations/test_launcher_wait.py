"""`dlprof run` waits for the whole job (tools/launcher/job_wait.h): processes the
command leaves running are waited for before the summary, up to --wait, and
named when they outlive it; --regions reaches the summary."""

import json
import os
import re
import signal
import subprocess
import time
import unittest

import dltest.annotations as U

MIB = 1024 * 1024


class LauncherWaitTest(U.AnnotTestCase):

    def launch(self, args, timeout=60):
        return U.run([U.LAUNCHER] + args, U.base_env(), timeout, cwd=self.data)

    def dump_details(self, traces, *args):
        """The summary's full listing (--details where the verdict comes first)."""
        p = subprocess.run([U.DUMP, "--summary", "--details"] + list(args) + [traces],
                           capture_output=True, text=True, timeout=60)
        if p.returncode == 2 and "--details" in p.stderr:
            p = subprocess.run([U.DUMP, "--summary"] + list(args) + [traces],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def summary_json(self):
        p = subprocess.run([U.DUMP, "--summary", "--format", "json", self.traces],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_background_process_is_waited_for(self):
        data = os.path.join(self.data, "data.bin")
        with open(data, "wb") as f:
            f.write(b"\x01" * MIB)
        # The shell exits at once; its background job reads 1 MiB later.
        # Its output goes elsewhere, so that only the launcher holds the pipes.
        start = time.monotonic()
        p = self.launch(["run", "--dir", self.traces, "--", "/bin/sh", "-c",
                         "(sleep 0.5; cat data.bin >/dev/null) >/dev/null 2>&1 & exit 0"])
        elapsed = time.monotonic() - start
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertGreaterEqual(elapsed, 0.5)
        self.assertNotIn("still running", p.stderr)
        # The summary printed on stderr has the background read...
        self.assertIn(data, p.stderr)
        self.assertIn("1.0 MiB", p.stderr)
        # ... and every trace is complete.
        s = self.summary_json()
        self.assertEqual(s["files"][data]["read"]["bytes"], MIB)
        self.assertNotIn("no end marker", p.stderr)

    def test_wait_bound_names_the_processes_left(self):
        start = time.monotonic()
        p = self.launch(["run", "--wait", "1", "--dir", self.traces, "--", "/bin/sh", "-c",
                         "sleep 30 >/dev/null 2>&1 & echo $!"])
        elapsed = time.monotonic() - start
        sleeper = int(p.stdout.split()[0])
        try:
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertGreaterEqual(elapsed, 1.0)
            self.assertLess(elapsed, 20)
            m = re.search(r"dlprof: 1 process of the run still running after --wait 1 s; "
                          r"the summary has their I/O so far: pid (\d+) \(sleep 30\)", p.stderr)
            self.assertIsNotNone(m, p.stderr)
            self.assertEqual(int(m.group(1)), sleeper)
            # Summarised all the same (the verdict, or the listing).
            self.assertRegex(p.stderr, r"\ndlprof (summary|verdict):")
            self.assertTrue(os.path.exists("/proc/%d" % sleeper), "left alone, not killed")
        finally:
            try:
                os.kill(sleeper, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def test_no_summary_does_not_wait(self):
        start = time.monotonic()
        p = self.launch(["run", "--no-summary", "--quiet", "--dir", self.traces, "--",
                         "/bin/sh", "-c", "sleep 3 >/dev/null 2>&1 & echo $!"])
        sleeper = int(p.stdout.split()[0])
        try:
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertLess(time.monotonic() - start, 2.5)
        finally:
            try:
                os.kill(sleeper, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def test_wait_and_regions_options(self):
        for bad in (["--wait", "soon"], ["--wait", "-1"], ["--regions", "middle"]):
            p = self.launch(["run"] + bad + ["--", "true"])
            self.assertEqual(p.returncode, 2, bad)
            self.assertIn(bad[0], p.stderr)
        # The attribution the summary used, in its listing and its JSON.
        script = ("import dlprof\n"
                  "with dlprof.region('outer'):\n"
                  "    with dlprof.region('inner'):\n"
                  "        open('data.bin', 'rb').read()\n")
        with open(os.path.join(self.data, "data.bin"), "wb") as f:
            f.write(b"x" * 4096)
        for pick in ("innermost", "outermost"):
            traces = os.path.join(self.tmp, "traces-" + pick)
            p = self.launch(["run", "--regions", pick, "--dir", traces, "--",
                             U.SYSTEM_PYTHON, "-c", script])
            self.assertEqual(p.returncode, 0, p.stderr)
            listing = self.dump_details(traces, "--regions", pick)
            self.assertIn("Per region (%s;" % pick, listing)
            j = subprocess.run([U.DUMP, "--summary", "--format", "json", "--regions", pick,
                                traces], capture_output=True, text=True, timeout=60)
            self.assertEqual(json.loads(j.stdout)["region_attribution"], pick)
            rows = [l.split() for l in listing.splitlines()
                    if l.strip().startswith(("inner ", "outer "))]
            with_io = {r[0] for r in rows if r[4] != "0"}
            self.assertEqual(with_io, {"inner" if pick == "innermost" else "outer"},
                             p.stderr)

    def test_help_states_include_and_wait(self):
        p = self.launch(["--help"])
        self.assertIn("also trace paths under P, even inside an excluded", p.stdout)
        self.assertNotIn("trace only paths under P", p.stdout)
        self.assertIn("--wait S", p.stdout)
        self.assertIn("--regions WHICH", p.stdout)


if __name__ == "__main__":
    unittest.main()
