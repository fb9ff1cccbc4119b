"""The CUPTI plugin's loading, on any machine (no GPU needed).

Checks what libdlprof does with CUDA_INJECTION64_PATH and that the plugin,
loaded as the CUDA driver loads it, stays quiet where it must and steps
aside cleanly where CUPTI cannot attach (here: no CUDA driver).

    plugin_load_test.py   (env: DLPROF_LIB, DLPROF_DUMP, DLPROF_CUPTI_PLUGIN,
                           DLPROF_PLUGIN_LOAD)
"""

import os
import unittest

import dltest

PLUGIN = os.environ.get("DLPROF_CUPTI_PLUGIN", "")
LOADER = os.environ.get("DLPROF_PLUGIN_LOAD", "")


def facts(stdout):
    return [tuple(l.split(" ", 1)) for l in stdout.splitlines() if " " in l]


class PluginLoadTest(dltest.TraceTestCase):

    @classmethod
    def setUpClass(cls):
        for path in (dltest.LIB, dltest.DUMP, LOADER):
            if not path or not os.path.exists(path):
                raise RuntimeError("%r missing: run through ctest after a build" % path)

    def loader(self, env=None, plugin=True, quiet=True):
        # Whatever the outer environment holds, start from no injection.
        extra = {"CUDA_INJECTION64_PATH": None}
        extra.update(env or {})
        cmd = [LOADER] + ([PLUGIN] if plugin and PLUGIN else [])
        return self.run_traced(cmd, env=extra, quiet=quiet)

    def test_injection_points_at_the_plugin(self):
        p = self.loader(plugin=False)
        want = PLUGIN if PLUGIN else "(unset)"
        self.assertIn(("INJECTION", want), facts(p.stdout))
        self.assertEqual(p.stderr, "")

    def test_no_injection_when_cuda_is_not_traced(self):
        p = self.loader(env={"DLPROF_TRACE": "posix,stdio"}, plugin=False)
        self.assertIn(("INJECTION", "(unset)"), facts(p.stdout))

    def test_inherited_injection_dropped_when_cuda_is_not_traced(self):
        if not PLUGIN:
            self.skipTest("no CUPTI plugin built")
        p = self.loader(env={"DLPROF_TRACE": "posix", "CUDA_INJECTION64_PATH": PLUGIN},
                        plugin=False)
        self.assertIn(("INJECTION", "(unset)"), facts(p.stdout))

    def test_another_tools_injection_is_left_alone_and_named(self):
        other = "/opt/some-profiler/libinjection.so"
        p = self.loader(env={"CUDA_INJECTION64_PATH": other}, plugin=False, quiet=False)
        self.assertIn(("INJECTION", other), facts(p.stdout))
        if PLUGIN:
            self.assertIn("CUDA_INJECTION64_PATH is already set to " + other, p.stderr)
            said = [l for l in p.stderr.splitlines()
                    if l.startswith("dlprof:") and "events written" not in l]
            self.assertEqual(len(said), 1, p.stderr)
        # DLPROF_QUIET=1: not even that.
        p = self.loader(env={"CUDA_INJECTION64_PATH": other}, plugin=False)
        self.assertEqual(p.stderr, "")

    def test_plugin_without_dlprof_does_nothing(self):
        if not PLUGIN:
            self.skipTest("no CUPTI plugin built")
        env = dltest.base_env()
        env.pop("CUDA_INJECTION64_PATH", None)
        p = dltest.run([LOADER, PLUGIN], env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(("INIT", "1"), facts(p.stdout))
        self.assertEqual(p.stderr, "")

    def test_plugin_with_cuda_off_does_nothing(self):
        if not PLUGIN:
            self.skipTest("no CUPTI plugin built")
        p = self.loader(env={"DLPROF_TRACE": "posix"})
        self.assertIn(("INIT", "1"), facts(p.stdout))
        self.assertEqual(p.stderr, "")

    def test_plugin_steps_aside_without_a_driver(self):
        if not PLUGIN:
            self.skipTest("no CUPTI plugin built")
        try:
            import ctypes
            ctypes.CDLL("libcuda.so.1")
            self.skipTest("a CUDA driver is present: CUPTI would attach")
        except OSError:
            pass
        p = self.loader(quiet=False)
        self.assertEqual(facts(p.stdout).count(("INIT", "1")), 2)
        # Said once, even though InitializeInjection ran twice.
        self.assertEqual(p.stderr.count("GPU activity is not traced"), 1, p.stderr)
        trace = self.decode()
        self.assertEqual([e for e in trace.events if e.get("cat") == "cuda"], [])


if __name__ == "__main__":
    dltest.main()
