"""The harness for tests of PyTorch programs (tests/integration/scripts/
torch_*.py): skipped where DLPROF_SYSTEM_PYTHON has no torch; the program
runs traced with the bootstrap first on PYTHONPATH, as the runtime puts it,
writes what it measured of itself (its truth: next() calls, batch waits,
steps) to a JSON file, and the test compares that with the trace and the
summary."""

import json
import os
import unittest

import dltest


def bootstrap_env(extra=None, pythonpath=None):
    """PYTHONPATH as the runtime sets it: the bootstrap's directory first
    (then `pythonpath`, where the program had one of its own)."""
    env = {"PYTHONPATH": dltest.BOOTSTRAP if pythonpath is None
           else dltest.BOOTSTRAP + ":" + pythonpath}
    env.update(extra or {})
    return env


class TorchTestCase(dltest.TraceTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not dltest.has_torch():
            raise unittest.SkipTest("%s has no torch" % dltest.SYSTEM_PYTHON)

    def run_truth(self, script, mode, *args, env=None, python_args=(), wrapper=(),
                  timeout=170, done=True):
        """Runs `[wrapper] python [python_args] script mode DATA TRUTH [args]`
        under the tracer with the bootstrap (and `env`); the program's last
        line is "done" unless `done` is False. Returns (truth, process)."""
        out = os.path.join(self.tmp, "truth.json")
        cmd = list(wrapper) + [dltest.SYSTEM_PYTHON] + list(python_args) + \
            [script, mode, self.data, out] + [str(a) for a in args]
        p = self.run_traced(cmd, env=bootstrap_env(env), timeout=timeout)
        if done:
            self.assertEqual(p.stdout.strip().splitlines()[-1], "done")
        with open(out) as f:
            return json.load(f), p
