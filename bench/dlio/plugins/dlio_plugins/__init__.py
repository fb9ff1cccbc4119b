"""DLIO plugins of dlprof's harness (bench/dlio), loaded through DLIO's own
plugin settings (`workload.reader.data_loader_classname`): nothing in DLIO's
checkout is edited."""
