"""The dlprof environment variables read on the Python side (those the
library reads are lib/core/config.cc's): one parser for their yes/no values,
with the spellings the library takes for its own, so that
DLPROF_PYTHON_SAMPLES=false means what DLPROF_ENABLE=false means. A value
that is neither is said by the library (once for a job, by rank 0, never
under DLPROF_QUIET): every Python process and loader worker of every rank
saying it would print ranks x workers x epochs lines."""

import os

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def flag(name, default):
    """The yes/no value of environment variable `name`: `default` where it
    is unset or none of 1/true/yes/on, 0/false/no/off."""
    value = os.environ.get(name)
    if value is None:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    return default
