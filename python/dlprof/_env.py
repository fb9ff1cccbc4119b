"""The dlprof environment variables read on the Python side (those the
library reads are lib/core/config.cc's): one parser for their yes/no values,
with the spellings and the warning the library has for its own, so that
DLPROF_PYTHON_SAMPLES=false means what DLPROF_ENABLE=false means."""

import os
import sys

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def flag(name, default):
    """The yes/no value of environment variable `name`: `default` where it
    is unset; where it is none of 1/true/yes/on, 0/false/no/off, a warning on
    stderr (as the library words it) and `default`."""
    value = os.environ.get(name)
    if value is None:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    sys.stderr.write("dlprof: ignoring %s='%s': expected 0 or 1; using the default (%d)\n"
                     % (name, value, int(default)))
    return default
