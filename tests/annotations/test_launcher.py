"""The `dlprof` launcher (tools/launcher): environment, exit status, signals,
summary."""

import glob
import os
import re
import socket
import select
import signal
import struct
import subprocess
import time
import unittest

import dltest.annotations as U


def libm():
    for pattern in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                    "/lib64/libm.so.6", "/usr/lib64/libm.so.6", "/lib/*/libm.so.6"):
        found = glob.glob(pattern)
        if found:
            return found[0]
    return None


def announced_events(path):
    """The events a trace's block headers announce (docs/FORMAT.md)."""
    with open(path, "rb") as f:
        data = f.read()
    (at,) = struct.unpack_from("<I", data, 12)
    events = 0
    while at + 48 <= len(data):
        _magic, _flags, zsize, _raw, n = struct.unpack_from("<IIIII", data, at)
        events += n
        at += 48 + zsize
    return events


def cuda_kinds(text):
    """The record kinds a text lists: words of [a-z] in `a,b,c` lists and
    after "or"."""
    return set(re.findall(r"\b(kernel|memcpy|memset|sync|runtime|driver|nvtx|all)\b", text))


class LauncherTest(U.AnnotTestCase):

    def launch(self, args, env=None, timeout=60, cwd=None):
        e = U.base_env()
        e.update(env or {})
        return U.run([U.LAUNCHER] + args, e, timeout, cwd=cwd)

    def exit_with(self, *args):
        return [U.program("exit_with")] + list(args)

    def test_version_and_help(self):
        p = self.launch(["--version"])
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout, r"^dlprof \d+\.\d+\.\d+\n$")
        p = self.launch(["--help"])
        self.assertEqual(p.returncode, 0)
        for word in ("--dir", "--trace", "--buffer-kb", "--flush-ms", "--on-full", "--stacks",
                     "--cuda", "--include", "--exclude", "--quiet", "--no-summary",
                     "DLPROF_DIR", "DLPROF_TRACE", "DLPROF_BUFFER_KB", "DLPROF_FLUSH_MS",
                     "DLPROF_ON_FULL", "DLPROF_STACKS", "DLPROF_CUDA", "DLPROF_INCLUDE",
                     "DLPROF_EXCLUDE", "DLPROF_QUIET", "DLPROF_ENABLE", "LD_PRELOAD",
                     "PYTHONPATH", "[wait]", "[off]", "dlprof-traces",
                     "kernel,memcpy,memset,sync"):
            self.assertIn(word, p.stdout)
        self.assertEqual(self.launch(["run", "--help"]).stdout, p.stdout)

    def test_cuda_kinds_agree(self):
        """--help's --cuda kinds are the README's DLPROF_CUDA row's, and the
        launcher takes each (the CUPTI plugin's parser judges them)."""
        help_text = self.launch(["--help"]).stdout
        cuda = help_text[help_text.index("--cuda KINDS"):help_text.index("--include P")]
        with open(os.path.join(U.HERE, "..", "..", "README.md"), encoding="utf-8") as f:
            row = [l for l in f if l.startswith("| `DLPROF_CUDA` |")][0]
        meaning = row.split("|")[2]
        self.assertEqual(cuda_kinds(cuda), cuda_kinds(meaning))
        self.assertEqual(cuda_kinds(cuda), {"kernel", "memcpy", "memset", "sync", "runtime",
                                            "driver", "all"})
        for kind in sorted(cuda_kinds(cuda)):
            p = self.launch(["run", "--cuda", kind, "--quiet", "--no-summary", "--dir",
                             self.traces, "--"] + self.exit_with("code", "0"))
            self.assertEqual(p.returncode, 0, (kind, p.stderr))

    def test_usage_errors(self):
        self.assertEqual(self.launch([]).returncode, 2)
        self.assertEqual(self.launch(["run"]).returncode, 2)
        p = self.launch(["run", "--bogus", "--", "true"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown option --bogus", p.stderr)
        # Each valued option is checked before anything starts, with its own
        # message (not the runtime's "ignoring DLPROF_...: using the default").
        touched = os.path.join(self.data, "ran")
        for args, message in [
                (["--buffer-kb", "abc"], "--buffer-kb: 'abc' is not a size in KiB (4..1048576)"),
                (["--buffer-kb=2"], "--buffer-kb: '2' is not a size in KiB (4..1048576)"),
                (["--flush-ms", "0"], "--flush-ms: '0' is not a time in milliseconds (1..3600000)"),
                (["--on-full", "maybe"], "--on-full: 'maybe' is neither wait nor drop"),
                (["--trace", "posix,disk"],
                 "--trace: 'posix,disk' is not a list of modules (posix,stdio,mpiio,cuda,app,gds,aio or all)"),
                (["--cuda", "kernels"], "--cuda: 'kernels' is not a list of GPU record kinds "
                                        "(kernel,memcpy,memset,sync,runtime,driver or all)"),
                (["--wait", "soon"], "--wait: 'soon' is not a number of seconds (e.g. 10 or 0.5)"),
                (["--regions", "all"], "--regions: 'all' is neither innermost nor outermost"),
                (["--dir="], "--dir: needs a directory"),
                (["--include="], "--include: needs a path"),
                # Not the runtime's "ignoring DLPROF_EXCLUDE='relative': ...;
                # using the default (...)", which then exited 2 unrun.
                (["--exclude", "relative"],
                 "--exclude: 'relative' is not an absolute path (paths are matched absolute)"),
                (["--include", "/data:rel"],
                 "--include: 'rel' is not an absolute path (paths are matched absolute)"),
                (["--exclude", ":"], "--exclude: needs a path"),
                (["--keep-when", "batch_wait>25%"],
                 "--keep-when: goes with --keep DURATION (it keeps windows of a bounded trace)"),
                (["--timeline="], "--timeline: needs a file name, e.g. job.pftrace"),
                (["--buffer-kb"], "--buffer-kb: needs a value (see dlprof --help)")]:
            cmd = [] if args == ["--buffer-kb"] else ["--"] + self.exit_with("--touch", touched, "code", "0")
            p = self.launch(["run", "--dir", self.traces] + args + cmd)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(p.stderr, "dlprof: %s\n" % message, args)
            self.assertEqual(p.stdout, "", args)
            self.assertFalse(os.path.exists(touched), "%s: the command ran" % args)
        self.assertEqual(U.trace_files(self.traces), [])
        # A DLPROF_KEEP of the environment bounds the trace as --keep does:
        # --keep-when goes with it (it was refused, "DLPROF_KEEP is not set").
        p = self.launch(["run", "--dir", self.traces, "--keep-when", "batch_wait>25%",
                         "--quiet", "--no-summary", "--"] + self.exit_with("code", "0"),
                        {"DLPROF_KEEP": "2s"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")

    def test_a_forgotten_value_takes_no_option(self):
        """A valued option given without its value does not take the next
        option as one ("--dir --stacks" made a trace directory "./--stacks",
        "--timeline --quiet" passed "-o --quiet" to dlprof-dump, "--dir --"
        wrote into "./--/"): a usage error, and nothing runs."""
        touched = os.path.join(self.data, "ran")
        cmd = ["--"] + self.exit_with("--touch", touched, "code", "0")
        for option, following in [("--dir", "--stacks"), ("--timeline", "--quiet"),
                                  ("--dir", "--"), ("--exclude", "-h"), ("--keep", "--no-summary")]:
            args = ["run", option, following] + (cmd[1:] if following == "--" else cmd)
            p = self.launch(args, cwd=self.tmp)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertEqual(p.stderr, "dlprof: %s: needs a value, but the next argument, '%s', "
                             "is an option; a value that begins with '-' goes as %s=VALUE\n"
                             % (option, following, option), args)
            self.assertFalse(os.path.exists(touched), "%s: the command ran" % args)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, following)), args)
        # Given with '=', such a value is taken, and passed on to dlprof-dump
        # so that it takes it too.
        p = self.launch(["run", "--dir=-odd", "--timeline=-t.pftrace", "--quiet",
                         "--no-summary"] + cmd, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(U.trace_files(os.path.join(self.tmp, "-odd"))), 1)
        self.assertGreater(os.path.getsize(os.path.join(self.tmp, "-t.pftrace")), 0)

    def test_trace_takes_the_aio_module(self):
        # DLPROF_TRACE=aio is a module (io_uring, Linux AIO, POSIX AIO
        # requests): `--trace aio` too (it was refused, "not a list of
        # modules"). The program prints each request it made.
        program = U.program("linux_aio")
        if not os.path.exists(program):
            self.skipTest("linux_aio not built")
        for modules, with_aio in (("posix,aio", True), ("aio", True), ("posix", False)):
            with self.subTest(modules=modules):
                traces = os.path.join(self.tmp, "traces-" + modules.replace(",", "-"))
                data = os.path.join(self.tmp, "data-" + modules.replace(",", "-"))
                os.mkdir(data)
                p = self.launch(["run", "--dir", traces, "--trace", modules, "--no-summary",
                                 "--quiet", "--", program, data])
                self.assertEqual(p.returncode, 0, p.stderr)
                # (and the one it left in flight, recorded at its context's end)
                made = [l for l in p.stdout.splitlines() if l.startswith(("EV\t", "UNREAPED\t"))]
                self.assertTrue(made, p.stdout)
                events, rc = U.dump_jsonl(traces)
                self.assertEqual(rc, 0)
                requests = [e for e in events if e["cat"] == "aio"]
                self.assertEqual(len(requests), len(made) if with_aio else 0, requests)
                posix = [e for e in events if e["cat"] == "posix"]
                self.assertEqual(bool(posix), "posix" in modules)

    def test_unknown_command_suggests_run(self):
        p = self.launch(["python3", "x.py", "two words"])
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stdout, "")
        self.assertEqual(p.stderr, "dlprof: unknown command python3; to trace a program: "
                                   "dlprof run -- python3 x.py 'two words'\n"
                                   "(dlprof --help lists the commands and options)\n")
        # A typo of a command is no program to trace (it suggested "dlprof
        # run -- rn -- ./io").
        for word, command in (("rn", "run"), ("rnu", "run"), ("Run", "run"), ("kep", "keep"),
                              ("versoin", "version")):
            p = self.launch([word, "--", "./io"])
            self.assertEqual(p.returncode, 2)
            self.assertEqual(p.stderr, "dlprof: unknown command '%s' (did you mean '%s'?)\n"
                             "(dlprof --help lists the commands and options)\n" % (word, command))
        p = self.launch(["--dir", "d", "python3"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown option --dir; options of run come after it: "
                      "dlprof run --dir d python3\n", p.stderr)
        self.assertNotIn("usage:", p.stderr)

    def test_one_line_for_the_run(self):
        """Without --quiet, the run's processes print no line of their own
        (DLPROF_QUIET=exit in their environment); the launcher prints one, before
        the summary: the traces the run wrote and the events their blocks
        hold. A DLPROF_QUIET the user set is left alone."""
        script = " ; ".join([" ".join(self.exit_with("--touch", os.path.join(self.data, n),
                                                     "code", "0")) for n in ("a", "b")])
        p = self.launch(["run", "--dir", self.traces, "--", "/bin/sh", "-c", script])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("events written", p.stderr)
        files = U.trace_files(self.traces)
        self.assertGreaterEqual(len(files), 3)  # the shell and its two children at least
        run_dir = os.path.dirname(os.path.dirname(files[0]))
        line = "dlprof: %d traces, %s events in %s\n" % (
            len(files), "{:,}".format(sum(announced_events(f) for f in files)), run_dir)
        self.assertIn(line, p.stderr)
        self.assertLess(p.stderr.index(line), p.stderr.index("dlprof verdict:"))
        self.assertEqual(p.stderr.count(" traces, "), 1)
        # A bounded trace (DLPROF_KEEP) is one trace in several segment
        # files, and its events are those kept.
        keep_dir = os.path.join(self.tmp, "keep")
        loop = ("import os, time\nend = time.monotonic() + 1.6\n"
                "while time.monotonic() < end:\n    os.stat(%r)\n    time.sleep(0.005)\n"
                % self.data)
        p = self.launch(["run", "--dir", keep_dir, "--keep", "1s", "--no-summary", "--",
                         "/usr/bin/python3", "-c", loop])
        self.assertEqual(p.returncode, 0, p.stderr)
        segments = U.trace_files(keep_dir)
        traces = {re.sub(r"(\.k\d+)?\.dlprof$", "", f) for f in segments}
        self.assertGreater(len(segments), len(traces))
        run_dir = os.path.dirname(os.path.dirname(segments[0]))
        self.assertEqual(p.stderr, "dlprof: bounded trace (last 1s kept) in %s; to keep the "
                         "window around a moment: dlprof keep %s\n"
                         "dlprof: %d trace%s (%d segment files), %s events kept in %s\n"
                         % (run_dir, run_dir, len(traces), "" if len(traces) == 1 else "s",
                            len(segments),
                            "{:,}".format(sum(announced_events(f) for f in segments)), run_dir))
        # In drop mode the blocks are read for the dropped count too.
        before = set(U.trace_files(self.traces))
        p = self.launch(["run", "--dir", self.traces, "--on-full", "drop", "--no-summary", "--"]
                        + self.exit_with("--touch", os.path.join(self.data, "c"), "code", "0"))
        (new,) = set(U.trace_files(self.traces)) - before
        self.assertEqual(p.stderr, "dlprof: 1 trace, %d events, 0 dropped in %s\n"
                         % (announced_events(new), os.path.dirname(os.path.dirname(new))))
        self.assertGreater(announced_events(new), 0)
        # Two ranks at once into one run directory: each launcher counts its
        # own command's processes (the shell and its two children), not the
        # other rank's.
        ranks_dir = os.path.join(self.tmp, "ranks")
        procs = []
        for rank in (0, 1):
            e = U.base_env()
            e.update({"RANK": str(rank), "WORLD_SIZE": "2", "DLPROF_RUN_ID": "two-ranks"})
            procs.append(subprocess.Popen([U.LAUNCHER, "run", "--dir", ranks_dir, "--", "/bin/sh",
                                           "-c", script], env=e, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        for proc in procs:
            _, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 0, err)
            self.assertRegex(err, r"(?m)^dlprof: %d traces, [\d,]+ events in %s\n"
                             % (len(files), re.escape(os.path.join(ranks_dir, "two-ranks"))))
        self.assertEqual(len(U.trace_files(ranks_dir)), 2 * len(files))
        # A file with no header yet is another rank's where its name says
        # so (the other rank's first trace, just created, failed this test
        # under load); one of this rank's own is unreadable. The shell,
        # mkdir and exit_with write the three traces.
        host_dir = os.path.join(ranks_dir, "empty-files",
                                re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname()))
        named = os.path.join(host_dir, "%s-" + os.path.basename(host_dir) + "-%s-1.dlprof")
        e = U.base_env()
        e.update({"RANK": "0", "WORLD_SIZE": "2", "DLPROF_RUN_ID": "empty-files"})
        p = U.run([U.LAUNCHER, "run", "--dir", ranks_dir, "--", "/bin/sh", "-c",
                   "mkdir -p %s && : > %s && : > %s && %s" % (
                       host_dir, named % ("python3", "999999"), named % ("sh", "$$"),
                       " ".join(self.exit_with("code", "0")))], e, 60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr, r"(?m)^dlprof: 3 traces, [\d,]+ events; 1 unreadable in ")
        # The user's choice stands: their lines, not the launcher's.
        p = self.launch(["run", "--dir", self.traces, "--no-summary", "--"]
                        + self.exit_with("code", "0"), {"DLPROF_QUIET": "0"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr, r"^dlprof: trace \S+: \d+ events written, 0 dropped\n$")
        # --quiet: nothing at all.
        p = self.launch(["run", "--dir", self.traces, "--quiet", "--no-summary", "--"]
                        + self.exit_with("code", "0"))
        self.assertEqual(p.stderr, "")

    def test_warnings_of_the_run_are_said(self):
        # The processes' lines at exit are silenced, not why tracing stepped
        # aside nor a bad value's warning (DLPROF_QUIET=exit).
        p = self.launch(["run", "--dir", self.traces, "--no-summary", "--",
                         "/bin/sh", "-c", "/bin/true"], env={"DLPROF_FLUSH_MS": "soon"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr.count("ignoring DLPROF_FLUSH_MS='soon'"), 1, p.stderr)
        self.assertNotIn("events written", p.stderr)
        afile = os.path.join(self.data, "afile")
        with open(afile, "w") as f:
            f.write("x")
        p = self.launch(["run", "--dir", afile, "--no-summary", "--", "/bin/true"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("the program runs untraced", p.stderr)

    def test_exit_status_passes_through(self):
        for code in (0, 3, 255):
            p = self.launch(["run", "--quiet", "--no-summary", "--dir", self.traces, "--"]
                            + self.exit_with("code", str(code)))
            self.assertEqual(p.returncode, code, p.stderr)
        p = self.launch(["run", "--quiet", "--no-summary", "--dir", self.traces, "--",
                         os.path.join(self.tmp, "no-such-program")])
        self.assertEqual(p.returncode, 127)
        self.assertIn("cannot run", p.stderr)

    def test_killed_by_a_signal_dies_of_it(self):
        p = self.launch(["run", "--quiet", "--no-summary", "--dir", self.traces, "--"]
                        + self.exit_with("signal", str(int(signal.SIGTERM))))
        self.assertEqual(p.returncode, -signal.SIGTERM, p.stderr)
        # Through a shell too: 128 + signal, as for any killed command.
        cmd = " ".join([U.LAUNCHER, "run", "--quiet", "--no-summary", "--dir", self.traces,
                        "--"] + self.exit_with("signal", str(int(signal.SIGTERM))))
        p = subprocess.run(["/bin/sh", "-c", cmd + "; echo status=$?"], env=U.base_env(),
                           capture_output=True, text=True, timeout=60)
        self.assertIn("status=%d" % (128 + signal.SIGTERM), p.stdout)

    def test_sigterm_to_the_launcher_reaches_the_command(self):
        e = U.base_env()
        # The command says when it runs, with its pid (the shell execs
        # sleep): the signal goes out once the launcher has started it, not
        # after a guessed time that a loaded machine may overrun. (The
        # launcher blocks signals until its forwarding handlers are in.)
        proc = subprocess.Popen([U.LAUNCHER, "run", "--quiet", "--no-summary", "--dir",
                                 self.traces, "--", "/bin/sh", "-c",
                                 "echo STARTED $$; exec sleep 30"], env=e,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            self.assertTrue(ready, "the command did not start within 60 s")
            line = proc.stdout.readline().decode()
            self.assertRegex(line, r"^STARTED \d+\n$")
            command = int(line.split()[1])
            start = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=20)
            self.assertLess(time.monotonic() - start, 10)
            self.assertEqual(proc.returncode, -signal.SIGTERM)
            # The command got it: the launcher waited for it to die.
            self.assertFalse(os.path.exists("/proc/%d" % command),
                             "the command still runs")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()

    def test_environment_reaches_the_library(self):
        extra = libm()
        out = os.path.join(self.data, "touched.txt")
        names = ["LD_PRELOAD", "DLPROF_DIR", "DLPROF_TRACE", "DLPROF_BUFFER_KB",
                 "DLPROF_FLUSH_MS", "DLPROF_ON_FULL", "DLPROF_STACKS", "DLPROF_CUDA",
                 "DLPROF_INCLUDE", "DLPROF_EXCLUDE", "DLPROF_QUIET", "PYTHONPATH"]
        args = ["run", "--dir", self.traces, "--trace", "posix,app", "--buffer-kb", "64",
                "--flush-ms", "50", "--on-full", "drop", "--stacks", "--cuda", "kernel",
                "--include", self.data, "--include", "/nowhere", "--exclude", "/proc",
                "--quiet", "--no-summary", "--"]
        env = {"LD_PRELOAD": extra} if extra else {}
        env["PYTHONPATH"] = "/some/where"
        cmd = self.exit_with("--touch", out, *sum((["--env", n] for n in names), []),
                             "code", "0")
        p = self.launch(args + cmd, env)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = dict(l.split("=", 1) for l in p.stdout.splitlines())
        lib = os.path.realpath(U.LIB)
        self.assertEqual(got["LD_PRELOAD"], lib + (":" + extra if extra else ""))
        self.assertEqual(got["DLPROF_DIR"], self.traces)
        self.assertEqual(got["DLPROF_TRACE"], "posix,app")
        self.assertEqual(got["DLPROF_BUFFER_KB"], "64")
        self.assertEqual(got["DLPROF_FLUSH_MS"], "50")
        self.assertEqual(got["DLPROF_ON_FULL"], "drop")
        self.assertEqual(got["DLPROF_STACKS"], "1")
        self.assertEqual(got["DLPROF_CUDA"], "kernel")
        self.assertEqual(got["DLPROF_INCLUDE"], self.data + ":/nowhere")
        self.assertEqual(got["DLPROF_EXCLUDE"], "/proc")
        self.assertEqual(got["DLPROF_QUIET"], "1")
        self.assertEqual(got["PYTHONPATH"], os.path.realpath(U.PYDIR) + ":/some/where")
        self.assertEqual(p.stderr, "")  # --quiet: nothing from dlprof
        # The library used them: a trace in --dir with the write, and a stack.
        v = self.inspect()
        writes = [e for e in v.io({"write"}) if e.get("path") == out]
        self.assertEqual(len(writes), 1)
        self.assertIn("stack", writes[0])

    def test_library_not_listed_twice(self):
        lib = os.path.realpath(U.LIB)
        # The launcher itself runs traced here: keep its trace in the test's
        # directory too.
        p = self.launch(["run", "--quiet", "--no-summary", "--dir", self.traces, "--"]
                        + self.exit_with("--env", "LD_PRELOAD", "code", "0"),
                        {"LD_PRELOAD": lib, "DLPROF_DIR": self.traces, "DLPROF_QUIET": "1"})
        self.assertEqual(p.stdout, "LD_PRELOAD=%s\n" % lib)

    def test_sanitizer_runtime_stays_first(self):
        # A program checked with ASan needs its runtime first in LD_PRELOAD:
        # dlprof goes after it, and the program runs and is traced.
        found = subprocess.run(["gcc", "-print-file-name=libasan.so"], stdout=subprocess.PIPE,
                               text=True).stdout.strip()
        if not os.path.isabs(found):
            self.skipTest("no libasan")
        asan, lib, extra = os.path.realpath(found), os.path.realpath(U.LIB), libm()
        out = os.path.join(self.data, "asan.txt")
        p = self.launch(["run", "--quiet", "--no-summary", "--dir", self.traces, "--"]
                        + self.exit_with("--touch", out, "--env", "LD_PRELOAD", "code", "0"),
                        {"LD_PRELOAD": ":".join(filter(None, [asan, extra])),
                         "ASAN_OPTIONS": "detect_leaks=0"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "LD_PRELOAD=%s\n" % ":".join(filter(None, [asan, lib, extra])))
        writes = [e for e in self.inspect().io({"write"}) if e.get("path") == out]
        self.assertEqual(len(writes), 1)

    def test_summary_of_this_run_only(self):
        out = os.path.join(self.data, "t.txt")
        cmd = self.exit_with("--touch", out, "code", "0")
        p = self.launch(["run", "--no-summary", "--dir", self.traces, "--"] + cmd)
        self.assertEqual(p.returncode, 0)
        self.assertNotIn("summary", p.stderr.lower())
        self.assertEqual(len(U.trace_files(self.traces)), 1)
        p = self.launch(["run", "--dir", self.traces, "--"] + cmd)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")  # the summary goes to stderr, the verdict first
        self.assertIn("dlprof verdict:", p.stderr)
        self.assertIn("(--details: the full listing", p.stderr)
        self.assertEqual(len(U.trace_files(self.traces)), 2)
        # dlprof-dump read only the new trace: one process.
        self.assertRegex(p.stderr, r"\b1 process")

    def test_summary_failure_is_tolerated(self):
        # A trace directory where nothing can be written: the command still
        # runs and its status comes back.
        p = self.launch(["run", "--dir", "/proc/dlprof-cannot-write", "--"]
                        + self.exit_with("code", "5"))
        self.assertEqual(p.returncode, 5)

    def test_jobs_get_a_run_each_and_only_rank_0_speaks(self):
        # Traces go to DLPROF_DIR/<run id>/<host>/; the run is the job's
        # (docs/USER_GUIDE.md, "Runs").
        cmd = self.exit_with("--env", "DLPROF_DIR", "--env", "DLPROF_RUN_ID", "code", "0")
        base = os.path.join(self.tmp, "dlprof-traces")
        p = self.launch(["run", "--"] + cmd, {"SLURM_JOB_ID": "4242", "SLURM_PROCID": "0",
                                              "SLURM_NTASKS": "2"}, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        want = os.path.join(base, "slurm-4242")
        self.assertEqual(p.stdout, "DLPROF_DIR=%s\nDLPROF_RUN_ID=slurm-4242\n" % base)
        (trace,) = U.trace_files(want)
        self.assertEqual(os.path.dirname(trace), os.path.join(want, os.uname().nodename))
        self.assertIn("dlprof-dump --summary " + want, p.stderr)
        self.assertNotIn("Per process", p.stderr)
        p = self.launch(["run", "--"] + cmd, {"SLURM_JOB_ID": "4242", "SLURM_PROCID": "1",
                                              "SLURM_NTASKS": "2"}, cwd=self.tmp)
        self.assertEqual(p.returncode, 0)
        self.assertNotIn("dlprof-dump", p.stderr)
        self.assertEqual(len(U.trace_files(want)), 2)
        p = self.launch(["run", "--"] + cmd, {"OMPI_COMM_WORLD_RANK": "0",
                                              "OMPI_COMM_WORLD_SIZE": "4",
                                              "OMPI_MCA_ess_base_jobid": "77"}, cwd=self.tmp)
        self.assertEqual(p.stdout, "DLPROF_DIR=%s\nDLPROF_RUN_ID=ompi-77\n" % base)
        # One that is set already is kept.
        p = self.launch(["run", "--no-summary", "--"] + cmd,
                        {"DLPROF_RUN_ID": "mine", "SLURM_JOB_ID": "4242"}, cwd=self.tmp)
        self.assertEqual(p.stdout, "DLPROF_DIR=%s\nDLPROF_RUN_ID=mine\n" % base)
        # Outside a job: a new run each time, and the summary is of that run.
        runs = []
        for _ in range(2):
            p = self.launch(["run", "--"] + cmd, cwd=self.tmp)
            self.assertEqual(p.returncode, 0, p.stderr)
            lines = p.stdout.splitlines()
            self.assertEqual(lines[0], "DLPROF_DIR=%s" % base)
            run_id = lines[1].split("=", 1)[1]
            self.assertRegex(run_id, r"^[A-Za-z0-9._-]+-\d{8}-\d{6}-\d+-[0-9a-f]{4}$")
            self.assertEqual(len(U.trace_files(os.path.join(base, run_id))), 1)
            self.assertRegex(p.stderr, r"\b1 process")
            runs.append(run_id)
        self.assertNotEqual(runs[0], runs[1])

if __name__ == "__main__":
    unittest.main(verbosity=2)
