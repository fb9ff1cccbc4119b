"""DLIO's PyTorch data loader with non-persistent workers: each epoch forks
(or spawns) its workers anew, as a training script with the DataLoader's
default `persistent_workers=False` does.

Why a plugin: DLIO's TorchDataLoader.read() always passes
`persistent_workers=True` when `read_threads` > 0 (for every torch but 1.3.1),
so with DLIO as shipped the workers start once, in epoch 1, and no later
epoch waits for a worker's start-up. This class takes DLIO's own loader as
read() builds it (its dataset, sampler, worker_init_fn, prefetch factor,
multiprocessing context) and rebuilds the torch DataLoader with the one
argument changed; next() and everything else stay DLIO's. Used with

    ++workload.reader.data_loader_classname=dlio_plugins.nonpersistent.NonPersistentTorchDataLoader
    ++workload.reader.data_loader_sampler=index

and bench/dlio/plugins on PYTHONPATH (bench/dlio/run_dlio.py does both for
shape c).
"""

from torch.utils.data import DataLoader

from dlio_benchmark.data_loader.torch_data_loader import TorchDataLoader


class NonPersistentTorchDataLoader(TorchDataLoader):
    def read(self):
        super().read()
        built = self._dataset
        if built.num_workers == 0:
            return  # no workers: nothing persists
        self._dataset = DataLoader(built.dataset,
                                   batch_size=built.batch_size,
                                   sampler=built.sampler,
                                   num_workers=built.num_workers,
                                   pin_memory=built.pin_memory,
                                   drop_last=built.drop_last,
                                   worker_init_fn=built.worker_init_fn,
                                   multiprocessing_context=built.multiprocessing_context,
                                   prefetch_factor=built.prefetch_factor,
                                   persistent_workers=False)
