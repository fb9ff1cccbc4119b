"""The stand-in's `hydra.core.hydra_config.HydraConfig`: the `hydra` node of the
running job, which DLIO reads for `runtime.output_dir` (its default output
folder) and `runtime.config_sources` / `runtime.choices` (a log line)."""


class HydraConfig:
    _cfg = None

    @classmethod
    def instance(cls):
        return cls

    @classmethod
    def set_config(cls, cfg):
        """cfg: the whole composed config; its `hydra` node is kept."""
        cls._cfg = cfg.hydra if "hydra" in cfg else cfg

    @classmethod
    def initialized(cls):
        return cls._cfg is not None

    @classmethod
    def get(cls):
        if cls._cfg is None:
            # Hydra raises this where no @hydra.main job runs (compose() alone).
            raise ValueError("HydraConfig was not set")
        return cls._cfg
