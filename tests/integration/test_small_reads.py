"""The small_reads finding against what a program measured itself
(programs/read_pieces.c: its own clock around each read, its own counts).

- whole files read as Python's f.read() reads them (a read of the file's
  size + 1, then the 1-byte read that finds the end): no small reads, no
  finding (before: every end-of-file probe was a "small read", half of the
  reads, and the finding claimed half of the read time: 702 ms where the
  probes took 9.2 ms);
- files read in 4 KiB pieces beside large files read in 8 MiB pieces: the
  finding, its counts the program's, and its time no more than the
  program's own clock around those small reads (before: the read time
  times the small share, the large reads' time in it).
"""

import os

import dltest

PROGRAM = dltest.program("read_pieces")
KIB = 1024


class SmallReadsTest(dltest.TraceTestCase):

    def files(self, prefix, count, size):
        paths = []
        for i in range(count):
            path = os.path.join(self.data, "%s%03d.bin" % (prefix, i))
            with open(path, "wb") as f:
                f.write(bytes([i % 251]) * size)
            paths.append(path)
        return paths

    def run_program(self, specs):
        p = self.run_traced([PROGRAM] + specs, timeout=60)
        truth = {}
        for line in p.stdout.splitlines():
            what, ops, ns = line.split()
            truth[what] = (int(ops), int(ns))
        self.decode()
        s = self.summary()
        reads = s["file_classes"]["data"]["read"]
        findings = {f["rule"]: f for f in s["verdict"]["findings"]}
        return truth, reads, findings

    def test_whole_files_are_no_small_reads(self):
        paths = self.files("w", 300, 256 * KIB)
        truth, reads, findings = self.run_program(["whole:" + p for p in paths])
        self.assertEqual(truth["EMPTY"][0], 300)
        self.assertEqual(truth["SMALL"][0], 0)
        self.assertEqual(reads["ops"], 600)
        self.assertEqual(reads["empty_ops"], truth["EMPTY"][0])
        self.assertEqual(reads["small_ops"], 0)
        self.assertEqual(reads["small_time_ns"], 0)
        self.assertNotIn("small_reads", findings)

    def test_reads_in_small_pieces(self):
        small = self.files("s", 100, 32 * KIB)
        large = self.files("l", 16, 8192 * KIB)
        specs = ["4096:" + p for p in small] + ["%d:%s" % (8192 * KIB, p) for p in large]
        truth, reads, findings = self.run_program(specs)
        self.assertEqual(truth["SMALL"][0], 100 * 8)
        self.assertEqual(truth["LARGE"][0], 16)
        self.assertEqual(reads["small_ops"], truth["SMALL"][0])
        self.assertEqual(reads["empty_ops"], truth["EMPTY"][0])
        self.assertIn("small_reads", findings)
        f = findings["small_reads"]
        self.assertIn("of the %d data reads" % (truth["SMALL"][0] + truth["LARGE"][0]), f["what"])
        # The finding's time is the small reads' own: inside the program's
        # clock around each of them, so no more than their sum.
        self.assertGreater(f["cost_ns"], 0)
        self.assertEqual(f["cost_ns"], reads["small_time_ns"])
        self.assertLessEqual(f["cost_ns"], truth["SMALL"][1], (f, truth))


if __name__ == "__main__":
    dltest.main()
