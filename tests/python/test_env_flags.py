"""The yes/no environment variables read on the Python side
(python/dlprof/_env.py): DLPROF_PYTHON_DISABLE and DLPROF_PYTHON_SAMPLES take
the spellings the library takes for its own (lib/core/config.cc ParseBool).
Before, `false`, `off` or `true` were silently taken as the opposite of what
they say, or ignored. Another value is said once, by the library, as its
own variables' are: not by every Python process (a line per process, worker
and rank, even under DLPROF_QUIET)."""

import os
import subprocess
import sys
import tempfile
import unittest

LIB = os.environ.get("DLPROF_LIB", "")

# Each case in a fresh interpreter (the package reads its variables once);
# `children` more interpreters started by it, as loader workers would be.
PROBE = """
import subprocess, sys
import dlprof
from dlprof import _env
for _ in range(int(sys.argv[1])):
    subprocess.run([sys.executable, "-c", "import dlprof"], check=True)
print(_env.flag("DLPROF_PYTHON_SAMPLES", True), dlprof._load() is None)
"""


def probe(preload=True, children=0, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("DLPROF_PYTHON_")
         and k not in ("LD_PRELOAD", "DLPROF_QUIET")}
    e.update(env)
    with tempfile.TemporaryDirectory() as traces:
        if preload:
            e.update(LD_PRELOAD=LIB, DLPROF_DIR=traces)
            e.setdefault("DLPROF_QUIET", "exit")  # (not the exit line)
        p = subprocess.run([sys.executable, "-c", PROBE, str(children)], env=e,
                           capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError(p.stderr)
    samples, disabled = p.stdout.split()
    return samples == "True", disabled == "True", p.stderr


@unittest.skipUnless(LIB and os.path.exists(LIB), "run through ctest (DLPROF_LIB)")
class EnvFlagsTest(unittest.TestCase):

    def test_spellings(self):
        for off in ("0", "false", "no", "off"):
            self.assertEqual(probe(DLPROF_PYTHON_SAMPLES=off)[0::2], (False, ""), off)
        for on in ("1", "true", "yes", "on"):
            self.assertEqual(probe(DLPROF_PYTHON_SAMPLES=on)[0::2], (True, ""), on)
        self.assertEqual(probe()[0::2], (True, ""))
        # With the library preloaded, the package finds it unless disabled.
        self.assertFalse(probe()[1])
        for on in ("1", "true", "yes", "on"):
            self.assertTrue(probe(DLPROF_PYTHON_DISABLE=on)[1], on)
        for off in ("0", "false", "no", "off"):
            self.assertFalse(probe(DLPROF_PYTHON_DISABLE=off)[1], off)

    def test_other_values_are_said_once_by_the_library(self):
        samples, _, err = probe(children=3, DLPROF_PYTHON_SAMPLES="maybe")
        self.assertTrue(samples)
        self.assertEqual(err, "dlprof: ignoring DLPROF_PYTHON_SAMPLES='maybe': expected 0 or 1; "
                              "using the default (1)\n")
        # Quiet means quiet; and without the library nothing says it.
        self.assertEqual(probe(DLPROF_PYTHON_SAMPLES="maybe", DLPROF_QUIET="1")[2], "")
        self.assertEqual(probe(preload=False, DLPROF_PYTHON_DISABLE="maybe")[0::2], (True, ""))


if __name__ == "__main__":
    unittest.main()
