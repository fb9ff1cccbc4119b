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


def header(pid, host):
    """A trace file header (docs/FORMAT.md) of a bounded trace's segment."""
    strings = b"".join(struct.pack("<I", len(s)) + s for s in (host.encode(), b"/bin/train"))
    size = 64 + len(strings)
    fixed = bytearray(b"DLPROF\r\n" + struct.pack("<II", 3, size) + bytes(16) +
                      struct.pack("<iiiIQII", pid, 1, -1, 8, 0, 0, 0))
    h = bytes(fixed) + strings
    return h[:60] + struct.pack("<I", counters._crc32c(h)) + h[64:]


def interval(i, rank=0):
    """Interval i of 1 s from T0: no I/O, kinds, files or regions."""
    zz = (rank << 1) ^ (rank >> 63)
    return record(2, [T0 + i * S, S, zz, 0] + [0] * 40 + [0, 0, 0])


def stall(lo, hi, io, stalled):
    return record(8, [T0 + lo, hi - lo, io, stalled])


class ReadCountersTest(unittest.TestCase):

    def test_data_stall_records_go_to_the_interval_of_their_stretch(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "a.dlcount"), "wb") as f:
                f.write(header(11, "node1") + interval(0) + interval(1) +
                        stall(S // 2, S, 300, 100) +  # measured in interval 1
                        interval(2) + stall(S, 2 * S, 500, 200) +
                        record(99, [1, 2, 3]))  # a newer writer's: skipped
            with open(os.path.join(d, "b.dlcount"), "wb") as f:
                f.write(header(12, "node1") + interval(0, 1) + interval(1, 1))
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
