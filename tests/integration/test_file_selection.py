"""Which files the summary is about: file classes (data, code, outputs, ...),
--path / --exclude-path in every output, --top and the lists that say what
they cut. A real Python program under the tracer imports a module, reads a
small data set and writes a checkpoint."""

import json
import os
import subprocess
import unittest

import dltest as T

PROGRAM = r"""
import os, sys
import helper_module  # code: a .py file of the job, on its PYTHONPATH
root = sys.argv[1]
for name in ("train/a.bin", "train/b.bin", "train/c.bin", "val/v.bin"):
    with open(os.path.join(root, name), "rb") as f:
        f.read()
with open(os.path.join(root, "out", "ckpt.pt"), "wb") as f:
    f.write(b"c" * 4096)
"""

SIZES = {"train/a.bin": 1000, "train/b.bin": 2000, "train/c.bin": 3000, "val/v.bin": 500}


class FileSelectionTest(T.TraceTestCase):

    def setUp(self):
        super().setUp()
        for d in ("train", "val", "out", "code"):
            os.mkdir(os.path.join(self.data, d))
        for name, size in SIZES.items():
            with open(os.path.join(self.data, name), "wb") as f:
                f.write(b"d" * size)
        self.module = os.path.join(self.data, "code", "helper_module.py")
        with open(self.module, "w") as f:
            f.write("VALUE = 1\n")
        self.run_traced([T.SYSTEM_PYTHON, "-c", PROGRAM, self.data],
                        env={"PYTHONDONTWRITEBYTECODE": "1",
                             "PYTHONPATH": os.path.dirname(self.module)})

    def dump(self, *args):
        p = subprocess.run([T.DUMP] + list(args) + [self.traces], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def details(self, *args):
        """The full text listing: --summary --details where the summary opens
        with the verdict, --summary where --details is not known."""
        p = subprocess.run([T.DUMP, "--summary", "--details"] + list(args) + [self.traces],
                           capture_output=True, text=True, timeout=60)
        if p.returncode == 2 and "--details" in p.stderr:
            return self.dump("--summary", *args)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def summary(self, *args):
        return json.loads(self.dump("--summary", "--format", "json", *args))

    def test_file_classes(self):
        s = self.summary()
        classes = s["file_classes"]
        self.assertEqual(set(classes), {"data", "code", "outputs", "system", "other"})
        data = classes["data"]
        self.assertEqual(data["files"], 4)
        self.assertEqual(data["read"]["bytes"], sum(SIZES.values()))
        self.assertEqual(data["write"]["bytes"], 0)
        self.assertGreaterEqual(classes["code"]["files"], 1)
        self.assertGreaterEqual(classes["code"]["read"]["bytes"], len("VALUE = 1\n"))
        self.assertEqual(classes["outputs"]["files"], 1)
        self.assertEqual(classes["outputs"]["write"]["bytes"], 4096)
        # Every file is in one class, and the classes add up to the run's
        # (no list is cut here: under 20 files a class).
        self.assertEqual(s["left_out"]["files"], 0)
        self.assertEqual(sum(c["files"] for c in classes.values()), len(s["files"]))
        self.assertEqual(sum(c["read"]["bytes"] for c in classes.values()),
                         sum(f["read"]["bytes"] for f in s["files"].values()))
        text = self.details()
        self.assertIn("data set: 4 of %d files" % len(s["files"]), text)
        self.assertRegex(text, r"\n  data +4 +0 +6\.3 KiB +0 B ")  # files, directories

    def test_path_globs_filter_every_output(self):
        train = os.path.join(self.data, "train")
        s = self.summary("--path", train)
        self.assertEqual(sorted(s["files"]),
                         sorted(os.path.join(self.data, n) for n in SIZES if n.startswith("train")))
        self.assertEqual(s["run"]["read"]["bytes"], 6000)
        s = self.summary("--path", "*.bin", "--exclude-path", "*/val/*")
        self.assertEqual(s["run"]["read"]["bytes"], 6000)
        s = self.summary("--exclude-path", "*.bin")
        self.assertNotIn(os.path.join(self.data, "val/v.bin"), s["files"])
        self.assertIn(self.module, s["files"])
        # The event listings: only I/O on the files kept, and the events
        # that name no file.
        for fmt in ("jsonl", "chrome", "text"):
            out = self.dump("--format", fmt, "--path", "*/val/*")
            # (the text listing's process header line holds the command line)
            out = "\n".join(l for l in out.splitlines() if not l.startswith("#"))
            self.assertIn("v.bin", out, fmt)
            for other in ("a.bin", "ckpt.pt", "helper_module.py"):
                self.assertNotIn(other, out, fmt)
        events = [json.loads(l) for l in self.dump("--format", "jsonl", "--path", "*/val/*")
                  .splitlines()]
        paths = {e.get("path") for e in events if e["cat"] in ("posix", "stdio")}
        self.assertEqual(paths, {os.path.join(self.data, "val/v.bin")})

    def test_a_cut_listing_keeps_the_whole_listings_times(self):
        # The text listing's times count from the run's first event (second
        # 0, which --from counts from too), whatever the selection keeps: a
        # listing cut to the validation file's calls lines up with the whole
        # one (it counted from the first call kept, so its first line said
        # 0.000000000 for a call a few ms into the run).
        def lines(*args):
            # (Not the record of the process's exit, which names no file:
            # every selection keeps it, as it keeps MPI_Init.)
            return [l for l in self.dump(*args).splitlines()
                    if l and not l.startswith("#") and " exit() = " not in l]
        whole = lines()
        cut = lines("--path", "*/val/*")
        self.assertTrue(cut)
        self.assertTrue(whole[0].lstrip().startswith("0.000000000 "), whole[0])
        self.assertTrue(all("v.bin" in l for l in cut), cut)
        self.assertEqual([l for l in whole if "v.bin" in l], cut)
        # --from S keeps the calls from S on: each is at S or later.
        start = float(cut[0].split()[0])
        self.assertGreater(start, 0)
        after = lines("--from", "%.9f" % start)
        self.assertIn(cut[0], after)
        self.assertTrue(all(float(l.split()[0]) >= start for l in after), after[:3])

    def test_top_cuts_lists_and_says_so(self):
        s = self.summary()
        files = len(s["files"])
        text = self.details("--top", "2")
        per_file = text.split("Per file (by bytes moved)\n", 1)[1]
        self.assertIn("  ... and %d more (--top N)\n" % (files - 2), per_file)
        self.assertIn("Slowest operations\n", text)
        slowest = text.split("Slowest operations\n", 1)[1].split("\n\n", 1)[0].splitlines()
        self.assertEqual(len(slowest), 3)  # 2 calls, then what was left out
        self.assertRegex(slowest[2], r"^  \.\.\. and \d+ more \(--top N\)$")
        durations = [float(l.split()[0]) for l in slowest[:2]]
        self.assertEqual(durations, sorted(durations, reverse=True))
        # By default, as before: up to 20 files, so none is cut here.
        self.assertLessEqual(files, 20)
        self.assertNotIn("... and", self.details().split("Per file")[1]
                         .split("Files opened")[0])
        for bad in ("0", "x", "-1"):
            p = subprocess.run([T.DUMP, "--summary", "--top", bad, self.traces],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, bad)


if __name__ == "__main__":
    T.main()
