"""DLPROF_TEST_PRELOAD_PREFIX for tests built on tests/integration/dltest.py.

A sanitizer build of libdlprof.so needs the sanitizer's runtime loaded first
in every traced program:

  LD_PRELOAD="$(gcc -print-file-name=libasan.so) build-asan/lib/libdlprof.so"

dltest puts dltest.LIB alone in LD_PRELOAD (traced_env, and tests that build
an mpirun command line from it). Importing this module, where the
environment variable DLPROF_TEST_PRELOAD_PREFIX is set, makes dltest.LIB the
prefix (one or more paths, space-separated) followed by the library, and
makes dltest.check_environment() check each of those paths. scripts/
sanitize.sh sets the variable; sanitize/sitecustomize.py applies this module
to the integration suite without changing a line of it.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_INTEGRATION = os.path.join(os.path.dirname(_HERE), "integration")
if _INTEGRATION not in sys.path:
    sys.path.insert(0, _INTEGRATION)

import dltest  # noqa: E402

PREFIX = os.environ.get("DLPROF_TEST_PRELOAD_PREFIX", "").strip()
# The library itself, without any prefix.
LIB_PATH = getattr(dltest, "_unprefixed_lib", dltest.LIB)


def preload_value():
    """What LD_PRELOAD must hold for a traced program."""
    return (PREFIX + " " + LIB_PATH) if PREFIX else LIB_PATH


if PREFIX and not hasattr(dltest, "_unprefixed_lib"):
    dltest._unprefixed_lib = LIB_PATH
    dltest.LIB = preload_value()

    def check_environment():
        missing = [n for n, v in (("DLPROF_LIB", LIB_PATH), ("DLPROF_DUMP", dltest.DUMP),
                                  ("DLPROF_TEST_BIN", dltest.BIN)) if not v]
        if missing:
            raise RuntimeError("%s not set: run these tests through ctest" % ", ".join(missing))
        for path in PREFIX.split() + [LIB_PATH, dltest.DUMP, dltest.BIN]:
            if not os.path.exists(path):
                raise RuntimeError("%s does not exist: build the project first" % path)

    dltest.check_environment = check_environment
