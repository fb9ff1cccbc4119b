"""Seams of the source tree a newcomer trips on, kept closed (issue 51):

- each Python test file's name is its suite's alone: `python -m unittest
  test_x.py` in one suite's directory, or a runner that collects several
  suites at once, never meets another suite's file of the same name;
- a test, or a program a test runs, reaches the harness (tests/dltest) and
  the dlprof package through PYTHONPATH (ctest's environment, the program's
  env), never by editing sys.path with a path it was handed;
- bench/ builds on lib/ and include/, not on tests/ (a benchmark's build
  must not need the test tree's helpers).
"""

import collections
import os
import re
import unittest

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)


def files_under(top, suffixes):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d not in ("__pycache__", "node_modules")]
        for name in filenames:
            if name.endswith(suffixes):
                yield os.path.join(dirpath, name)


class TreeTest(unittest.TestCase):

    def test_test_files_are_named_once(self):
        by_name = collections.defaultdict(list)
        for path in files_under(TESTS, (".py",)):
            name = os.path.basename(path)
            if name.startswith("test_"):
                by_name[name].append(os.path.relpath(path, ROOT))
        self.assertEqual({n: p for n, p in by_name.items() if len(p) > 1}, {})

    def test_no_test_edits_sys_path(self):
        edits = re.compile(r"sys\.path\.(insert|append)\(")
        found = []
        for path in files_under(TESTS, (".py",)):
            if path == os.path.abspath(__file__):
                continue
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if edits.search(line):
                        found.append("%s:%d" % (os.path.relpath(path, ROOT), n))
        self.assertEqual(found, [])

    def test_bench_builds_on_no_test_code(self):
        include = re.compile(r'#\s*include\s+"tests/')
        found = []
        for path in files_under(os.path.join(ROOT, "bench"), (".c", ".cc", ".h", ".txt")):
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if include.search(line) or re.search(r"\btests/(helpers|unit)\b", line) \
                            and path.endswith("CMakeLists.txt"):
                        found.append("%s:%d" % (os.path.relpath(path, ROOT), n))
        self.assertEqual(found, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
