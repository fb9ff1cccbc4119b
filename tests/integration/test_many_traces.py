"""A run of more traces than dlprof-dump may hold files open.

A parent forks 1,200 short children (at most 32 alive at once), each of
which opens one file, makes 1 to 3 preads of 4 KiB and exits: 1,201 trace
files. dlprof-dump's event outputs decode them under a descriptor limit of
256 (soft and hard, so that raising the soft limit cannot help): a trace's
file is open only while the merge is among its blocks (docs/USER_GUIDE.md,
"Decoding large traces"), and at most 33 processes overlap in time. Before,
every file stayed open for the whole decode: 253 of the 1,201 were read
(exit 1, 948 "cannot open: Too many open files"). The events are checked
against what each child says it did.
"""

import collections
import decimal
import json
import re
import resource
import subprocess

import dltest

CHILDREN = 1200
ALIVE = 32
NOFILE = 256


def limit_files(soft, hard):
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class ManyTracesTest(dltest.TraceTestCase):

    def trace(self):
        self.file, = dltest.write_files(self.data, 1, lambda i: 3 * 4096)
        p = self.run_traced([dltest.program("fork_many"), str(CHILDREN), str(ALIVE), self.file],
                            timeout=120)
        self.parent = int(re.search(r"^PARENT (\d+) %d$" % CHILDREN, p.stdout, re.M).group(1))
        # pid -> (preads, bytes), as each child counted them.
        self.children = {int(pid): (int(n), int(b)) for pid, n, b in
                         re.findall(r"^CHILD (\d+) (\d+) (\d+)$", p.stdout, re.M)}
        self.assertEqual(len(self.children), CHILDREN)
        files = dltest.trace_files(self.traces)
        self.assertEqual(len(files), CHILDREN + 1)
        self.assertGreater(len(files), NOFILE * 4)
        self.assertEqual(dltest.wait_gone({dltest.read_header(f)["pid"] for f in files}), [])

    def dump(self, fmt, soft=NOFILE):
        """dlprof-dump --format FMT of the run under the descriptor limit
        (`soft` below it): its output; it exits 0 and says nothing."""
        p = subprocess.run([dltest.DUMP, "--format", fmt, self.traces],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, preexec_fn=limit_files(soft, NOFILE),
                           timeout=120)
        err = p.stderr.decode("utf-8", "replace")
        # (Before: 948 of the 1,201 traces unreadable, "Too many open files".)
        self.assertEqual((p.returncode, err.count("\n")), (0, 0), err[-600:])
        return p.stdout

    def check_children(self, calls):
        """`calls`: pid -> [(name, offset, bytes)] of the calls on the file,
        in the order decoded: each child's open, its preads, its close."""
        self.assertEqual(set(calls), set(self.children))
        for pid, (preads, nbytes) in self.children.items():
            got = calls[pid]
            self.assertEqual([c[0] for c in got], ["open"] + ["pread"] * preads + ["close"],
                             pid)
            self.assertEqual([c[1] for c in got[1:-1]], [4096 * k for k in range(preads)], pid)
            self.assertEqual(sum(c[2] for c in got[1:-1]), nbytes, pid)

    def test_event_outputs_decode_every_trace(self):
        # (One run for both outputs: tracing 1,200 processes is most of the time.)
        self.trace()
        self.check_jsonl(self.dump("jsonl"))
        self.check_chrome()
        # A soft limit of 4 leaves one descriptor past stdin, stdout and
        # stderr: the parent's trace, open for the whole merge, takes it.
        # dlprof-dump raises its soft limit to the hard one (before: 1,188
        # of the 1,201 traces unreadable in one run).
        self.check_jsonl(self.dump("jsonl", soft=4))

    def check_jsonl(self, out):
        calls = collections.defaultdict(list)
        pids = set()
        for line in out.splitlines():
            e = json.loads(line)
            pids.add(e["pid"])
            if e.get("path") == self.file:
                calls[e["pid"]].append((e["name"], e.get("offset"), e.get("bytes", 0)))
        self.assertEqual(pids, set(self.children) | {self.parent})
        self.check_children(calls)
        self.assertEqual(sum(len(c) for c in calls.values()),
                         sum(n + 2 for n, _ in self.children.values()))

    def check_chrome(self):
        doc = json.loads(self.dump("chrome"), parse_float=decimal.Decimal)
        calls = collections.defaultdict(list)
        for e in doc["traceEvents"]:
            args = e.get("args", {})
            if e["ph"] == "X" and args.get("path") == self.file:
                calls[e["pid"]].append((e["ts"], e["name"], args.get("offset"),
                                        args.get("ret", 0) if e["name"] == "pread" else 0))
        self.check_children({pid: [c[1:] for c in sorted(got, key=lambda c: c[0])]
                             for pid, got in calls.items()})


if __name__ == "__main__":
    dltest.main()
