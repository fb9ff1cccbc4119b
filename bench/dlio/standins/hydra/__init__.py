"""A stand-in for hydra-core 1.3 (not packaged in Debian), for running DLIO
(argonne-lcf/dlio_benchmark) unmodified under bench/dlio/run_dlio.py: only
the parts DLIO uses (bench/dlio/README.md, "Stand-ins"). Put
bench/dlio/standins on PYTHONPATH; never install it over a real Hydra."""

from hydra import core  # noqa: F401  (DLIO reads hydra.core.hydra_config after `import hydra`)
from hydra import utils  # noqa: F401
from hydra.core import hydra_config  # noqa: F401
from hydra._compose import ConfigCompositionException, MissingConfigException  # noqa: F401
from hydra._initialize import compose, initialize, initialize_config_dir, initialize_config_module  # noqa: F401
from hydra._main import main  # noqa: F401

__version__ = "1.3.2"
STANDIN = True  # tells the harness (and anyone asking) that this is not the real hydra-core
