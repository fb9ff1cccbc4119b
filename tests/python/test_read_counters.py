"""dlprof.read_counters (python/dlprof/counters.py) on counters files made
here, byte for byte as docs/FORMAT_BOUNDED.md lays them out: no traced
program, so a unit test. The data stall records of a process with GPU work
land in the row of the interval that holds their stretch's middle (a record
is written an interval after the stretch it measured); rows that no record
covers, and processes without any, have none (NaN), not 0."""

import math
import os
import struct
import tempfile
import unittest
import warnings

import dlprof  # the build's (build/python: on PYTHONPATH under ctest)
from dlprof import counters

S = 1000000000
T0 = 1000 * S


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def record(rtype, fields):
    payload = b"".join(varint(f) for f in fields)
    return struct.pack("<IHHII", 0x43504C44, rtype, 0, len(payload),
                       counters._crc32c(payload)) + payload


def header(pid, host, run="", real_ns=0):
    """A trace file header (docs/FORMAT.md) of a bounded trace's segment:
    host, exe, cmdline and run id; `real_ns` when it was opened."""
    strings = b"".join(struct.pack("<I", len(s)) + s
                       for s in (host.encode(), b"/bin/train", b"train", run.encode()))
    size = 64 + len(strings)
    fixed = bytearray(b"DLPROF\r\n" + struct.pack("<IIQQ", 3, size, 0, real_ns) +
                      struct.pack("<iiiIQII", pid, 1, -1, 8, 0, 0, 0))
    h = bytes(fixed) + strings
    return h[:60] + struct.pack("<I", counters._crc32c(h)) + h[64:]


def write_process(d, stem, pid, host, records, run="", real_ns=0):
    """STEM.dlcount, and beside it its segment STEM.dlprof (its header only:
    the events of no block kept), as a bounded trace leaves them; returns
    the counters file's path."""
    h = header(pid, host, run, real_ns)
    with open(os.path.join(d, stem + ".dlprof"), "wb") as f:
        f.write(h)
    path = os.path.join(d, stem + ".dlcount")
    with open(path, "wb") as f:
        f.write(h + b"".join(records))
    return path


def interval(i, rank=0, read_bytes=0):
    """Interval i of 1 s from T0: `read_bytes` read from data files in one
    call; no kinds, files or regions."""
    zz = (rank << 1) ^ (rank >> 63)
    io = [1 if read_bytes else 0, read_bytes] + [0] * 38
    return record(2, [T0 + i * S, S, zz, 0] + io + [0, 0, 0])


def stall(lo, hi, io, stalled):
    return record(8, [T0 + lo, hi - lo, io, stalled])


class ReadCountersTest(unittest.TestCase):

    def test_data_stall_records_go_to_the_interval_of_their_stretch(self):
        with tempfile.TemporaryDirectory() as d:
            write_process(d, "a", 11, "node1", [
                interval(0), interval(1),
                stall(S // 2, S, 300, 100),  # measured in interval 1
                interval(2), stall(S, 2 * S, 500, 200),
                record(99, [1, 2, 3])])  # a newer writer's: skipped
            write_process(d, "b", 12, "node1", [interval(0, 1), interval(1, 1)])
            c = dlprof.read_counters(d)
        self.assertEqual(len(c), 5)
        a = c[c.pid == 11].sort_values("start_ns")
        self.assertEqual(a.data_stall_ns.iloc[0], 100)
        self.assertEqual(a.io_outstanding_ns.iloc[0], 300)
        self.assertEqual(a.data_stall_ns.iloc[1], 200)
        self.assertEqual(a.io_outstanding_ns.iloc[1], 500)
        # Its last interval is measured in the next, which never came.
        self.assertTrue(math.isnan(a.data_stall_ns.iloc[2]))
        # A process without data stall records: none, not 0.
        b = c[c.pid == 12]
        self.assertTrue(b.data_stall_ns.isna().all())
        self.assertTrue(b.io_outstanding_ns.isna().all())
        self.assertEqual(c.data_stall_ns.sum(), 300)


class RunsAndDamageTest(unittest.TestCase):
    """Runs chosen as read_events chooses them, and a torn or damaged file
    said, naming it and the byte: two runs in one directory were summed
    (two kept runs of a loader reading 409,600 bytes each: 819,200), a
    missing path was an empty frame with no columns, a file cut to 20 bytes
    a bare struct.error, one cut by 7 bytes read with no word."""

    def two_runs(self, d):
        payload = b"".join(varint(v) for v in (T0 + S, T0, T0 + S, 4)) + b"loss"
        keep = struct.pack("<IHHII", 0x43504C44, 3, 0, len(payload),
                           counters._crc32c(payload)) + payload
        write_process(d, "old-11", 11, "node1", [interval(0, 0, 100), interval(1, 0, 100)],
                      "run-old", T0)
        write_process(d, "new-21", 21, "node1", [interval(0, 0, 4096), keep,
                                                 interval(1, 0, 4096)], "run-new", T0 + 3600 * S)

    def test_the_latest_run_with_a_warning_or_the_run_asked_for(self):
        with tempfile.TemporaryDirectory() as d:
            self.two_runs(d)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                c = dlprof.read_counters(d)
                k = dlprof.read_kept_windows(d)
            self.assertEqual(c.data_read_bytes.sum(), 2 * 4096)  # was 8392: both runs
            self.assertEqual(set(c.run), {"run-new"})
            self.assertEqual((list(k.run), list(k.pid), list(k.reason)), (["run-new"], [21],
                                                                          ["loss"]))
            said = [str(x.message) for x in w]
            self.assertTrue(any("holds 2 runs" in m and "run-old" in m for m in said), said)
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # the run asked for: no word
                old = dlprof.read_counters(d, run="run-old")
                self.assertEqual(len(dlprof.read_kept_windows(d, run="run-old")), 0)
            self.assertEqual((old.data_read_bytes.sum(), set(old.pid)), (200, {11}))
            with self.assertRaises(FileNotFoundError):
                dlprof.read_counters(d, run="run-none")

    def test_a_missing_path_raises(self):
        with tempfile.TemporaryDirectory() as d:
            for path in (os.path.join(d, "nope"), os.path.join(d, "nope.dlcount")):
                with self.assertRaises(FileNotFoundError, msg=path):
                    dlprof.read_counters(path)
                with self.assertRaises(FileNotFoundError, msg=path):
                    dlprof.read_kept_windows(path)

    def test_torn_and_damaged_files_are_said(self):
        with tempfile.TemporaryDirectory() as d:
            records = [interval(0, 0, 10), interval(1, 0, 20), interval(2, 0, 40)]
            whole = write_process(d, "p", 11, "node1", records)
            with open(whole, "rb") as f:
                data = f.read()
            last = len(data) - len(records[2])  # where the third record begins
            cases = {"cut20": data[:20], "cut7": data[:-7],
                     "flip": data[:last - 3] + bytes([data[last - 3] ^ 0xFF]) + data[last - 2:]}
            for name, blob in cases.items():
                with open(os.path.join(d, name + ".dlcount"), "wb") as f:
                    f.write(blob)
            path = os.path.join(d, "cut20.dlcount")
            with self.assertRaises(ValueError) as e:
                dlprof.read_counters(path)
            self.assertIn(path, str(e.exception))
            self.assertIn("byte 20", str(e.exception))
            for name, start, want, sum_ in (("cut7", last, "cut short at byte", 30),
                                            ("flip", last - len(records[1]), "damaged at byte",
                                             50)):
                path = os.path.join(d, name + ".dlcount")
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    c = dlprof.read_counters(path)
                said = [str(x.message) for x in w]
                self.assertTrue(any(path in m and "%s %d" % (want, start) in m for m in said),
                                (name, said))
                # The whole records, before (and after) the torn or damaged one.
                self.assertEqual(c.data_read_bytes.sum(), sum_, name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
