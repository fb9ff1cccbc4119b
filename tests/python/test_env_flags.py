"""The yes/no environment variables read on the Python side
(python/dlprof/_env.py): DLPROF_PYTHON_DISABLE and DLPROF_PYTHON_SAMPLES take
the spellings the library takes for its own (lib/core/config.cc ParseBool),
and warn, as it does, about any other value. Before, `false`, `off` or `yes`
were silently taken as the opposite of what they say, or ignored."""

import os
import subprocess
import sys
import unittest

# Each case in a fresh interpreter: the package reads its variables once.
PROBE = """
import dlprof
from dlprof import _env
print(_env.flag("DLPROF_PYTHON_SAMPLES", True), dlprof._load() is None)
"""


def probe(**env):
    e = dict(os.environ)
    e.pop("DLPROF_PYTHON_SAMPLES", None)
    e.pop("DLPROF_PYTHON_DISABLE", None)
    e.update(env)
    p = subprocess.run([sys.executable, "-c", PROBE], env=e, capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        raise AssertionError(p.stderr)
    samples, disabled = p.stdout.split()
    return samples == "True", disabled == "True", p.stderr


class EnvFlagsTest(unittest.TestCase):

    def test_spellings(self):
        for off in ("0", "false", "no", "off"):
            self.assertEqual(probe(DLPROF_PYTHON_SAMPLES=off)[0::2], (False, ""), off)
        for on in ("1", "true", "yes", "on"):
            self.assertEqual(probe(DLPROF_PYTHON_SAMPLES=on)[0::2], (True, ""), on)
        self.assertEqual(probe()[0::2], (True, ""))
        # Disabled: the package finds no library (here none is preloaded
        # either, so only the spellings that disable are checked to).
        for off in ("1", "true", "yes", "on"):
            self.assertTrue(probe(DLPROF_PYTHON_DISABLE=off)[1], off)

    def test_other_values_are_warned_about(self):
        samples, _, err = probe(DLPROF_PYTHON_SAMPLES="maybe")
        self.assertTrue(samples)
        self.assertEqual(err, "dlprof: ignoring DLPROF_PYTHON_SAMPLES='maybe': expected 0 or 1; "
                              "using the default (1)\n")


if __name__ == "__main__":
    unittest.main()
