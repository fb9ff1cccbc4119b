"""PyTorch DataLoader with worker processes, under Debian's python3-torch.

scripts/dataloader.py iterates a DataLoader (num_workers=2) over 200 small
files for 2 epochs; its Dataset opens and reads one file per item and reports
which process read it. The reads must all be in the trace, attributed to the
worker processes (children of the training process, never the training
process itself), and the bytes per file must be the file's size x epochs.
"""

import collections
import json

import dltest
from dltest.pytorch import TorchTestCase

EPOCHS = 2
WORKERS = 2
FILES = 200


class DataLoaderTest(TorchTestCase):

    def test_worker_reads_are_all_there(self):
        files = dltest.write_files(self.data, FILES, lambda i: 100 + 37 * i)
        p = self.run_traced(
            [dltest.SYSTEM_PYTHON, dltest.script("dataloader.py"), self.data,
             str(EPOCHS), str(WORKERS)], timeout=170)
        out = json.loads(p.stdout.strip().splitlines()[-1])
        parent = out["parent"]
        self.assertEqual(len(out["epochs"]), EPOCHS)
        reported_workers = set()
        for epoch in out["epochs"]:
            self.assertEqual(set(epoch), set(files))
            for path, (pid, nbytes) in epoch.items():
                self.assertEqual(nbytes, files[path])
                self.assertNotEqual(pid, parent)
                reported_workers.add(pid)
        # Workers are started afresh for each epoch.
        self.assertEqual(len(reported_workers), EPOCHS * WORKERS)

        trace = self.decode(keep=lambda e: e.get("path", "").startswith(self.data))
        for pid in reported_workers:
            self.assertEqual(trace.ppid_of(pid), parent)
        reads = [e for e in trace.under(self.data) if e["name"] in dltest.READ_NAMES]
        self.assertTrue(reads)
        self.assertEqual({e["pid"] for e in reads}, reported_workers)
        self.assertEqual(dltest.bytes_by_path(reads),
                         {path: size * EPOCHS for path, size in files.items()})
        # Per worker, exactly the files the DataLoader says it loaded.
        want = collections.Counter()
        for epoch in out["epochs"]:
            for path, (pid, nbytes) in epoch.items():
                want[(pid, path)] += nbytes
        got = collections.Counter()
        for e in reads:
            got[(e["pid"], e["path"])] += e.get("bytes", 0)
        self.assertEqual(+got, +want)
        # Each item was opened once per epoch, and every open was closed.
        opens = collections.Counter(e["path"] for e in trace.under(self.data)
                                    if e["name"] in ("open", "open64", "openat", "openat64"))
        self.assertEqual(opens, {path: EPOCHS for path in files})


if __name__ == "__main__":
    dltest.main()
