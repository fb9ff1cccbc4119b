"""Copies between files (sendfile, copy_file_range): both of their files,
in every output, against what the programs did.

- programs/copy_dest.c copies from a file the tracer leaves out (/etc) into
  one it traces, then between two traced files: jsonl and text named the
  source alone (a copy from /etc into `out` read like a read of `out`; a
  copy from `out` into `copy` never named `copy`, and `--path '*copy'`
  showed only its open). Each copy now names its destination (jsonl
  `dest_path`, and `dest_fd` where only the destination was traced; text
  "to PATH"), `--path` keeps a copy for either of its files, and the
  summary counts the bytes the program's calls returned as written to each
  destination;
- scripts/copy_best.py saves a 16 MiB checkpoint every other step and copies
  it to a "best" file with shutil.copyfile (sendfile), as pytorch/examples'
  ImageNet does: the saves counted the checkpoint's writes alone (the copy's
  bytes were missing), and the copy's read of the checkpoint between two
  steps could count as the loop's reading. The saves' bytes are now both
  files' (what the program's files hold), their time within the program's
  clock around each save and copy, and the batch wait within its clock
  around each reading. The copy's read made the checkpoint a data file
  ("Data files by I/O time", the data set's read bandwidth): the data
  files are now the batch files alone, by the bytes the program read."""

import json
import os

import dltest

COPIES = ("sendfile", "sendfile64", "copy_file_range")
# A region's or call's recorded end may lie this far past a clock read just
# after it (the TSC's conversion: integration.clock).
CLOCK_NS = 4000


class CopiesTest(dltest.TraceTestCase):

    def run_copies(self):
        truth_path = os.path.join(self.tmp, "truth.jsonl")
        self.run_traced([dltest.program("copy_dest"), self.data, truth_path])
        with open(truth_path) as f:
            truth = [json.loads(l) for l in f if l.strip()]
        self.assertEqual(len(truth), 4)
        self.assertTrue(all(t["ret"] > 0 for t in truth), truth)
        return truth

    def dump(self, *args):
        p = dltest.run([dltest.DUMP] + list(args) + [self.traces], dltest.base_env(), timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def copies_in(self, jsonl):
        return [e for e in (json.loads(l) for l in jsonl.splitlines() if l.strip())
                if e["name"] in COPIES]

    def test_jsonl_and_text_name_the_destination(self):
        truth = self.run_copies()
        copies = self.copies_in(self.dump("--format", "jsonl"))
        self.assertEqual(len(copies), len(truth), copies)
        for want, e in zip(truth, copies):
            self.assertEqual(e["name"], want["name"], e)
            self.assertEqual(e["dest_path"], want["dst"], e)
            self.assertEqual(e["bytes"], want["ret"], e)
            if want["src"]:
                self.assertEqual(e["path"], want["src"], e)
                self.assertNotIn("dest_fd", e)
            else:
                # The source left out: the event is on the destination,
                # and says so.
                self.assertEqual((e["path"], e["fd"], e["dest_fd"]),
                                 (want["dst"], want["dst_fd"], want["dst_fd"]), e)
        text = self.dump("--format", "text")
        lines = [l for l in text.splitlines() if any(n + "(" in l for n in COPIES)]
        self.assertEqual(len(lines), len(truth), text[-3000:])
        for want, line in zip(truth, lines):
            if want["src"]:
                self.assertIn("<%s>, to \"%s\"" % (want["src"], want["dst"]), line)
            else:
                self.assertIn("(to %d<%s>" % (want["dst_fd"], want["dst"]), line)
        # The timeline's args name it too.
        chrome = json.loads(self.dump("--format", "chrome"))
        events = chrome["traceEvents"] if isinstance(chrome, dict) else chrome
        slices = [e for e in events if e.get("name") in COPIES and e.get("ph") == "X"]
        self.assertEqual([e["args"]["dest_path"] for e in slices], [w["dst"] for w in truth])

    def test_path_keeps_a_copy_for_either_file(self):
        truth = self.run_copies()
        for want in truth:
            for side in ("src", "dst"):
                if not want[side]:
                    continue
                got = self.copies_in(self.dump("--format", "jsonl", "--path", want[side]))
                named = [e for e in got if e["name"] == want["name"] and
                         e["dest_path"] == want["dst"] and e["bytes"] == want["ret"]]
                self.assertEqual(len(named), 1, (side, want, got))

    def test_summary_counts_each_destination_written(self):
        truth = self.run_copies()
        files = self.summary()["files"]
        for dst in {t["dst"] for t in truth}:
            wrote = sum(t["ret"] for t in truth if t["dst"] == dst)
            self.assertEqual(files[dst]["write"]["bytes"], wrote, dst)
        out = os.path.join(self.data, "out")
        self.assertEqual(files[out]["read"]["bytes"],
                         sum(t["ret"] for t in truth if t["src"] == out))

    def test_a_checkpoint_copied_to_best_is_saved_twice(self):
        out = os.path.join(self.tmp, "truth.json")
        p = self.run_traced([dltest.SYSTEM_PYTHON, dltest.script("copy_best.py"), self.data, out],
                            env={"PYTHONPATH": dltest.PYTHON_DIR}, timeout=60)
        self.assertEqual(p.stdout.strip().splitlines()[-1], "done")
        with open(out) as f:
            truth = json.load(f)
        self.decode()
        s = self.summary()
        v = s["verdict"]
        c, wait = v["checkpoint"], v["batch_wait"]
        self.assertIsNotNone(c, v)
        saves, waits = truth["saves"], truth["waits"]
        # What the two files hold, each save's: the checkpoint and its copy.
        self.assertEqual(c["bytes"], truth["written"] + truth["copied"], c)
        self.assertEqual(s["files"][truth["best"]]["write"]["bytes"], truth["copied"])
        self.assertLessEqual(c["blocking_ns"], sum(saves) + CLOCK_NS * len(saves), (c, saves))
        self.assertGreaterEqual(c["blocking_ns"], 0.9 * sum(saves), (c, saves))
        # The batch wait: the program's reading, and for each save at most
        # 1 ms of copyfile's open, stat and close of the checkpoint to read
        # it (calls on a file read: reading, in one pass). It was 75.3 ms,
        # where the program's clock had 35.1, with the copies in it.
        self.assertLessEqual(wait["ns"], sum(waits) + CLOCK_NS * len(waits) + 1000000 * len(saves),
                             (wait, waits))
        # The data set: what the program read (8 MiB of batch files), not
        # the checkpoint its copies read (64 MiB more).
        data = s["file_classes"]["data"]
        self.assertEqual(data["read"]["bytes"], truth["read"], data["read"])


if __name__ == "__main__":
    dltest.main()
