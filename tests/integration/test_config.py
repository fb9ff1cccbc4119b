"""Configuration from the environment never stops the traced program.

- DLPROF_* set without LD_PRELOAD: the program runs as usual, nothing traced.
- DLPROF_ENABLE=0 with LD_PRELOAD: no trace, the program runs.
- A value that does not parse: one warning line on stderr naming the
  variable; the default is used and the program is traced.
- The one-line summary at exit (without DLPROF_QUIET) names the trace file
  and the number of events it holds.
- DLPROF_QUIET=1: no line of dlprof's at all on the program's stderr.
"""

import os
import re
import sys

import dltest

EXIT_LINE = re.compile(r"^dlprof: trace \S+: \d+ events written, \d+ dropped$")


def messages(stderr):
    """dlprof's lines but for the one at exit."""
    return [l for l in stderr.splitlines() if not EXIT_LINE.match(l)]


class ConfigTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        self.out = os.path.join(self.data, "out.bin")
        self.cmd = [dltest.program("write_file"), self.out, "10000", "1000"]

    def check_output(self, p):
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^WROTE \d+ \d+ 10000 10\n$")
        self.assertEqual(os.path.getsize(self.out), 10000)

    def check_traced_writes(self):
        trace = self.decode()
        writes = [e for e in trace.on(self.out) if e["name"] == "write"]
        self.assertEqual([e["offset"] for e in writes], list(range(0, 10000, 1000)))
        self.assertEqual(sum(e["bytes"] for e in writes), 10000)
        return trace

    def test_environment_without_preload(self):
        env = dltest.traced_env(self.traces, preload=False, extra={
            "DLPROF_BUFFER_KB": "abc", "DLPROF_ENABLE": "1",
            "DLPROF_TRACE": "posix", "DLPROF_FLUSH_MS": "10",
            "DLPROF_INCLUDE": "/", "DLPROF_QUIET": "0"})
        p = dltest.run(self.cmd, env)
        self.check_output(p)
        self.assertEqual(p.stderr, "")
        p = dltest.run([sys.executable, "-c", "print('fine')"], env)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "fine\n", ""))
        self.assertFalse(os.path.exists(self.traces))

    def test_enable_0_turns_everything_off(self):
        p = self.run_traced(self.cmd, env={"DLPROF_ENABLE": "0"}, quiet=False)
        self.check_output(p)
        self.assertEqual(p.stderr, "")
        self.assertFalse(os.path.exists(self.traces))

    def test_bad_value_warns_once_and_traces(self):
        p = self.run_traced(self.cmd, env={"DLPROF_BUFFER_KB": "abc"}, quiet=False)
        self.check_output(p)
        lines = messages(p.stderr)
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("DLPROF_BUFFER_KB", lines[0])
        self.assertIn("abc", lines[0])
        self.check_traced_writes()

    def test_bad_value_warned_once_per_job(self):
        # Every process of a job reads the same environment: the first says
        # it, its children (exec'd, and theirs) do not say it again.
        p = self.run_traced(["/bin/sh", "-c", "/bin/true; /bin/sh -c '/bin/true; /bin/true'"],
                            env={"DLPROF_FLUSH_MS": "soon"}, quiet=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [l for l in messages(p.stderr) if "DLPROF_FLUSH_MS" in l]
        self.assertEqual(len(lines), 1, p.stderr)

    def test_bad_value_warned_once_by_sibling_ranks(self):
        # A launcher's ranks are siblings: none inherits the others' note
        # that it was said. Rank 0 says it; the others, which a launcher
        # numbered, do not (each of 3 said it: a line per rank of a job).
        # (The launcher, an untraced shell, preloads the library into each.)
        p = self.run_traced(["/bin/sh", "-c", 'for r in 0 1 2; do RANK=$r LD_PRELOAD="$LIB" '
                             '/bin/true & done; wait'],
                            env={"DLPROF_FLUSH_MS": "soon", "LIB": dltest.LIB}, quiet=False,
                            preload=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [l for l in messages(p.stderr) if "DLPROF_FLUSH_MS" in l]
        self.assertEqual(len(lines), 1, p.stderr)

    def test_each_bad_value_named_once(self):
        p = self.run_traced(self.cmd, env={
            "DLPROF_BUFFER_KB": "lots", "DLPROF_FLUSH_MS": "-5",
            "DLPROF_ON_FULL": "maybe", "DLPROF_ENABLE": "sure"}, quiet=False)
        self.check_output(p)
        lines = messages(p.stderr)
        self.assertEqual(len(lines), 4, p.stderr)
        for var in ("DLPROF_ENABLE", "DLPROF_BUFFER_KB", "DLPROF_FLUSH_MS",
                    "DLPROF_ON_FULL"):
            self.assertEqual(len([l for l in lines if var in l]), 1, var)
        self.check_traced_writes()

    def test_summary_line_at_exit(self):
        p = self.run_traced(self.cmd, quiet=False)
        self.check_output(p)
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        m = re.match(r"^dlprof: trace (\S+): (\d+) events written, 0 dropped$", lines[0])
        self.assertIsNotNone(m, lines[0])
        trace = self.check_traced_writes()
        self.assertEqual(trace.files, [m.group(1)])
        self.assertEqual(len(trace.events), int(m.group(2)))

    def test_unusable_trace_dir_leaves_the_program_running(self):
        blocker = os.path.join(self.tmp, "not-a-dir")
        with open(blocker, "w") as f:
            f.write("x")
        p = self.run_traced(self.cmd, trace_dir=os.path.join(blocker, "traces"), quiet=False)
        self.check_output(p)
        lines = messages(p.stderr)
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("untraced", lines[0])

    def test_quiet_silences_every_message(self):
        # DLPROF_QUIET=1: nothing of dlprof's on the program's stderr, the
        # warnings and the note that it runs untraced included.
        p = self.run_traced(self.cmd, env={"DLPROF_BUFFER_KB": "abc", "DLPROF_PYTHON": "x"})
        self.check_output(p)
        self.assertEqual(p.stderr, "")
        blocker = os.path.join(self.tmp, "not-a-dir")
        with open(blocker, "w") as f:
            f.write("x")
        p = self.run_traced(self.cmd, trace_dir=os.path.join(blocker, "traces"))
        self.check_output(p)
        self.assertEqual(p.stderr, "")

    def test_trace_modules(self):
        # posix off: the file is written, no POSIX event is recorded.
        p = self.run_traced(self.cmd, env={"DLPROF_TRACE": "stdio"})
        self.check_output(p)
        trace = self.decode()
        self.assertEqual([e for e in trace.events if e["cat"] == "posix"], [])


if __name__ == "__main__":
    dltest.main()
