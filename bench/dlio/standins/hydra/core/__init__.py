"""The stand-in's `hydra.core` package: only `hydra_config` (bench/dlio/standins/hydra)."""
