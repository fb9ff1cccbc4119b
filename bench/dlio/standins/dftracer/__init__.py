"""A stand-in for pydftracer (not packaged in Debian): its Python API as no-ops,
so that DLIO (argonne-lcf/dlio_benchmark) runs unmodified with its own tracer
off (bench/dlio/README.md, "Stand-ins"). The API is in dftracer.python."""
