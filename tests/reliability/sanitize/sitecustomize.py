"""Put on PYTHONPATH by scripts/sanitize.sh: every test built on dltest.py
(the integration suite included) puts DLPROF_TEST_PRELOAD_PREFIX -- the
sanitizer runtime -- in front of libdlprof.so in LD_PRELOAD."""

import os
import sys

if os.environ.get("DLPROF_TEST_PRELOAD_PREFIX"):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        import preload_prefix  # noqa: F401
    except Exception as e:  # a python run that is not a dlprof test
        sys.stderr.write("sitecustomize: preload prefix not applied: %s\n" % e)
