"""A bounded trace (DLPROF_KEEP) of a process that has seen many paths:
each segment it begins defines again every string it interned, and that
must not cost memory in proportion to them.

programs/many_paths.c creates and unlinks 50,000 files of ~200-character
names (10 MB of paths, its own count), then reads one file every 20 ms for
3 s, past a few segments of DLPROF_KEEP=1s, and prints its peak resident
memory (VmHWM). The block buffers keep the size of the largest block: a new
segment's first block that held every path kept about four copies of them
(a peak of 76 MB against 35 MB unbounded: 42 MB for 10 MB of paths).
"""

import os

import dltest


class KeepPathsTest(dltest.TraceTestCase):

    def run_paths(self, trace_dir, env):
        data = os.path.join(self.tmp, "files-" + os.path.basename(trace_dir))
        os.makedirs(data)
        p = self.run_traced([dltest.program("many_paths"), data, "50000", "3"], env=env,
                            trace_dir=trace_dir, timeout=120)
        _, files, path_bytes, peak_kb = p.stdout.split()
        return int(files), int(path_bytes), int(peak_kb)

    def test_new_segments_define_every_path_in_small_blocks(self):
        files, path_bytes, bounded_kb = self.run_paths(self.traces, {"DLPROF_KEEP": "1s"})
        self.assertEqual(files, 50000)
        self.assertGreater(path_bytes, 8 << 20)
        # The later segments (.kN), begun after the paths: each defines them
        # all again, in blocks of strings alone of at most 1 MiB of them.
        later = [f for f in dltest.trace_files(self.traces)
                 if ".k" in os.path.basename(f) and "many_paths" in f]
        self.assertTrue(later, dltest.trace_files(self.traces))
        for f in later:
            blocks = dltest.block_headers(f)
            self.assertGreater(sum(b["raw_size"] for b in blocks), path_bytes, f)
            self.assertLess(max(b["raw_size"] for b in blocks), 2 << 20, f)
        # Memory: the same program unbounded, against what it measured of
        # itself. The bounded trace adds its counters (about 200 bytes a
        # file: 11 MB here), not copies of every path (42 MB before).
        plain = os.path.join(self.tmp, "plain")
        _, _, plain_kb = self.run_paths(plain, {})
        self.assertLess((bounded_kb - plain_kb) * 1024, 2 * path_bytes,
                        "peak %d kB bounded, %d kB unbounded" % (bounded_kb, plain_kb))


if __name__ == "__main__":
    dltest.main()
