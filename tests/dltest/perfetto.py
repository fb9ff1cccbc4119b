"""A small reader of Perfetto traces for the tests: the protobuf wire format,
the compressed chunks, and what Perfetto's trace processor makes of the
packets (machines, each read on its own: its sequences, their interned
strings and incremental clocks, its track uuids; processes and threads from
their descriptors; BEGIN/END pairs per track): tracks, slices, counters and
flows."""

import collections
import os
import shutil
import struct
import subprocess
import unittest
import zlib

# Perfetto's published schema, as the tests decode our output against it.
PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration")
PROTO = os.path.join(PROTO_DIR, "perfetto_trace.proto")
PROTOC = shutil.which("protoc")


def require_protoc():
    """Skips the test class (from setUpClass) where protoc is missing."""
    if PROTOC is None:
        raise unittest.SkipTest(
            "protoc not found: install protobuf-compiler (scripts/install-deps.sh)")


def protoc_decode(data):
    """protoc --decode of a trace against the schema: the CompletedProcess
    (stdout and stderr as bytes)."""
    return subprocess.run([PROTOC, "--proto_path=" + PROTO_DIR, "--decode=perfetto.protos.Trace",
                           PROTO], input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=60)


def fields(buf):
    """(field number, wire type, value) of a protobuf message: ints for
    varint and fixed64 fields, bytes for length-delimited ones."""
    at, out = 0, []

    def varint():
        nonlocal at
        shift = value = 0
        while True:
            b = buf[at]
            at += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value

    while at < len(buf):
        tag = varint()
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            out.append((field, wire, varint()))
        elif wire == 1:
            out.append((field, wire, int.from_bytes(buf[at:at + 8], "little")))
            at += 8
        elif wire == 2:
            n = varint()
            out.append((field, wire, bytes(buf[at:at + n])))
            at += n
        else:
            raise ValueError("unexpected wire type %d" % wire)
    return out


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def unzstd(data):
    """zstd-decompressed (Debian's Python has no zstd module: the zstd tool)."""
    return subprocess.run(["zstd", "-d", "-c"], input=data, stdout=subprocess.PIPE,
                          check=True, timeout=60).stdout


def packets(data):
    """The packets of a trace, those of compressed chunks expanded
    (compressed_packets: deflate; zstd_compressed_packets); and the
    decompressed chunks (each a Trace message of their own)."""
    out, chunks = [], []
    for field, _, packet in fields(data):
        assert field == 1, field
        inner = None
        for f, _, v in fields(packet):
            if f == 50:
                inner = zlib.decompress(v)
            elif f == 133:
                inner = unzstd(v)
        if inner is not None:
            chunks.append(inner)
            out.extend(v for f, _, v in fields(inner))
        else:
            out.append(packet)
    return out, chunks


class PerfettoTrace:
    """What the trace processor would make of a trace: tracks, slices,
    counters and flows."""

    def __init__(self, data):
        # uuid -> dict(name, parent, rank, ordered, counter, machine, and for a
        # process or thread track: pid, and tid, process_name, cmdline,
        # thread_name as described)
        self.tracks = {}
        self.machines = {}   # machine id -> its name (SystemInfo)
        # (machine id, pid) -> its ProcessTree entry: dict(ppid (None: not
        # given), cmdline); the trace processor's process.parent_upid
        self.process_tree = {}
        self.roots = {}      # machine id -> its root descriptor's fields (uuid 0)
        self.slices = []     # dict(track, name, cat, ts, dur, args, flows, ends)
        self.counters = collections.defaultdict(list)  # uuid -> [(ts, value)]
        interned = collections.defaultdict(dict)  # (seq, field) -> {iid: str}
        clocks = {}          # seq -> time of its last packet (incremental clock)
        clock_of = {}        # seq -> its default clock id
        open_slices = collections.defaultdict(list)
        self.interned_twice = 0
        self.packet_list, self.chunks = packets(data)
        for raw in self.packet_list:
            f = collections.defaultdict(list)
            for field, _, v in fields(raw):
                f[field].append(v)
            # The trace processor reads each machine's packets apart: its
            # sequences are its own.
            machine = f[98][0] if f[98] else 0
            seq = (machine, f[10][0] if f[10] else 0)
            for info in f[45]:
                self.machines[machine] = dict((k, v) for k, _, v in fields(info))[17].decode()
            for tree in f[2]:
                for field, _, process in fields(tree):
                    if field == 1:
                        p = collections.defaultdict(list)
                        for k, _, v in fields(process):
                            p[k].append(v)
                        key = (machine, signed(p[1][0]))
                        assert key not in self.process_tree, key
                        self.process_tree[key] = {
                            "ppid": signed(p[2][0]) if p[2] else None,
                            "cmdline": [a.decode() for a in p[3]]}
            for defaults in f[59]:
                for field, _, v in fields(defaults):
                    if field == 58:
                        clock_of[seq] = v
            for data_ in f[12]:
                for field, _, entry in fields(data_):
                    e = dict((k, v) for k, _, v in fields(entry))
                    table = interned[(seq, field)]
                    self.interned_twice += e[1] in table or e[2].decode() in table.values()
                    table[e[1]] = e[2].decode()
            for snapshot in f[6]:
                for _, _, clock in fields(snapshot):
                    c = dict((k, v) for k, _, v in fields(clock))
                    if c.get(3):
                        clocks[seq] = c[2]
            ts = None
            if f[8]:
                ts = f[8][0]
                if clock_of.get(seq) == 64:
                    ts = clocks[seq] = clocks[seq] + signed(ts)
            for descriptor in f[60]:
                d = dict((k, v) for k, _, v in fields(descriptor))
                if d[1] == 0:
                    self.roots[machine] = d
                    continue
                assert d[1] not in self.tracks, d  # uuids are unique in the file
                t = self.tracks[d[1]] = {"name": d[2].decode(), "parent": d.get(5, 0),
                                         "rank": signed(d.get(12, 0)),
                                         "ordered": d.get(11) == 3, "counter": 8 in d,
                                         "machine": machine}
                if 3 in d:
                    p = collections.defaultdict(list)
                    for k, _, v in fields(d[3]):
                        p[k].append(v)
                    t.update(pid=p[1][0], process_name=p[6][0].decode(),
                             cmdline=[a.decode() for a in p[2]])
                if 4 in d:
                    th = dict((k, v) for k, _, v in fields(d[4]))
                    t.update(pid=th[1], tid=th[2],
                             thread_name=th[5].decode() if 5 in th else None)
            for event in f[11]:
                self.event(seq, ts, fields(event), interned, open_slices, machine)
        self.open_at_end = sum(len(v) for v in open_slices.values())

    def event(self, seq, ts, event_fields, interned, open_slices, machine):
        e = collections.defaultdict(list)
        for field, _, v in event_fields:
            e[field].append(v)
        track, kind = e[11][0], e[9][0]
        # Track uuids are per machine: the track must be one of its own.
        assert self.tracks[track]["machine"] == machine, (track, machine)
        if kind == 4:
            value = (signed(e[30][0]) if e[30] else
                     struct.unpack("<d", e[44][0].to_bytes(8, "little"))[0])
            self.counters[track].append((ts, value))
            return
        if kind == 2:
            s = open_slices[track].pop()
            s["dur"] = ts - s["ts"]
            return
        assert kind == 1, kind
        args = {}
        for annotation in e[4]:
            a = dict((k, v) for k, _, v in fields(annotation))
            name = interned[(seq, 3)][a[1]]
            args[name] = interned[(seq, 29)][a[17]] if 17 in a else signed(a[4])
        # A name interned (name_iid) or not (name), a category or none.
        name = interned[(seq, 2)][e[10][0]] if e[10] else e[23][0].decode()
        cat = interned[(seq, 1)][e[3][0]] if e[3] else None
        s = {"track": track, "name": name, "cat": cat, "ts": ts, "args": args,
             "flows": e[47], "ends": e[48]}
        open_slices[track].append(s)
        self.slices.append(s)

    def process_of(self, uuid):
        """The process track a track belongs to, as the trace processor
        resolves it (a thread track: its process's, by pid on its machine;
        a process track: itself; another: its parent's), or None."""
        t = self.tracks[uuid]
        if "tid" in t:
            (p,) = [u for u, o in self.tracks.items() if "tid" not in o and
                    o.get("pid") == t["pid"] and o["machine"] == t["machine"]]
            return p
        if "pid" in t:
            return uuid
        return self.process_of(t["parent"]) if t["parent"] else None

    def thread_of(self, uuid):
        """The thread track a track belongs to (itself or its parent), or None."""
        while uuid:
            if "tid" in self.tracks[uuid]:
                return uuid
            if "pid" in self.tracks[uuid]:
                return None
            uuid = self.tracks[uuid]["parent"]
        return None

    def path(self, uuid):
        """Names from the top of the tree down to this track."""
        names = []
        while uuid:
            names.insert(0, self.tracks[uuid]["name"])
            uuid = self.tracks[uuid]["parent"]
        return names
