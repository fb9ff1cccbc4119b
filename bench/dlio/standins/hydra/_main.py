"""The stand-in's `@hydra.main`: parse the command line as Hydra does, compose
the config (`_compose.py`), make the run's output directory with its
`.hydra/` record (config.yaml, hydra.yaml, overrides.yaml: what DLIO's
postprocessor reads), set HydraConfig, and call the task with the config.

Run mode only, no chdir (Hydra 1.2+'s default, `version_base=None`).
Flags: `--config-path/-cp`, `--config-name/-cn`, `--config-dir/-cd` (added
after the task's own directory, as Hydra does), `--cfg/-c job|hydra|all`
with `--resolve` (print the config and exit), `--help/-h`, `--version`;
`--multirun` and the other Hydra flags are refused with a message.
"""

import datetime
import functools
import os
import sys

import yaml
from omegaconf import OmegaConf, open_dict

from hydra._compose import ConfigCompositionException, SearchPath, compose_config, task_config
from hydra.core.hydra_config import HydraConfig

_UNSPECIFIED = object()
_VALUE_FLAGS = {"--config-path": "config_path", "-cp": "config_path",
                "--config-name": "config_name", "-cn": "config_name",
                "--config-dir": "config_dir", "-cd": "config_dir",
                "--cfg": "cfg", "-c": "cfg", "--package": "package", "-p": "package"}
_REFUSED = ("--multirun", "-m", "--info", "-i", "--shell-completion", "-sc",
            "--experimental-rerun", "--hydra-help")


def register_resolvers():
    """Hydra's resolvers: `${now:FORMAT}` (cached: one time per run, as Hydra's)
    and `${hydra:KEY}`."""
    if not OmegaConf.has_resolver("now"):
        OmegaConf.register_new_resolver(
            "now", lambda pattern: datetime.datetime.now().strftime(pattern), use_cache=True)
    if not OmegaConf.has_resolver("hydra"):
        OmegaConf.register_new_resolver(
            "hydra", lambda key: OmegaConf.select(HydraConfig.get(), key))


def _parse_argv(argv):
    args = {"overrides": [], "cfg": None, "resolve": False, "help": False, "version": False,
            "config_dir": [], "config_path": None, "config_name": None, "package": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        flag, eq, inline = a.partition("=")
        if flag in _VALUE_FLAGS and a.startswith("-"):
            if eq:
                value = inline
            else:
                i += 1
                if i >= len(argv):
                    sys.exit(f"hydra stand-in: {a} needs a value")
                value = argv[i]
            name = _VALUE_FLAGS[flag]
            if name == "config_dir":
                args["config_dir"].append(value)
            else:
                args[name] = value
        elif a in ("--help", "-h"):
            args["help"] = True
        elif a == "--resolve":
            args["resolve"] = True
        elif a == "--version":
            args["version"] = True
        elif a in _REFUSED or a.startswith("--multirun"):
            sys.exit(f"hydra stand-in (bench/dlio/standins): {a} is not supported; run mode only")
        elif a.startswith("-"):
            sys.exit(f"hydra stand-in: unrecognized argument {a}")
        else:
            args["overrides"].append(a)
        i += 1
    return args


def _task_dir(task):
    module = sys.modules.get(task.__module__)
    path = getattr(module, "__file__", None) or sys.argv[0]
    return os.path.dirname(os.path.abspath(path))


def _job_name(task):
    module = sys.modules.get(task.__module__)
    path = getattr(module, "__file__", None) or sys.argv[0]
    return os.path.splitext(os.path.basename(path))[0]


def _write_record(cfg, output_dir):
    """Hydra's `.hydra/` record of the run, in the output directory."""
    sub = cfg.hydra.output_subdir
    if sub is None:
        return
    d = os.path.join(output_dir, str(sub))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.yaml"), "w", encoding="utf-8") as f:
        f.write(OmegaConf.to_yaml(task_config(cfg)))
    with open(os.path.join(d, "hydra.yaml"), "w", encoding="utf-8") as f:
        f.write(OmegaConf.to_yaml(OmegaConf.create({"hydra": OmegaConf.to_container(cfg.hydra)})))
    with open(os.path.join(d, "overrides.yaml"), "w", encoding="utf-8") as f:
        yaml.safe_dump(list(cfg.hydra.overrides.task), f, default_flow_style=False)


def _help(search_path, choices):
    lines = ["(hydra stand-in, bench/dlio/standins) Usage: PROGRAM [--config-dir DIR] "
             "[--cfg job|hydra|all] [GROUP=OPTION] [KEY=VALUE] [+KEY=VALUE] [++KEY=VALUE] [~KEY]",
             "", "Config groups:"]
    for group in sorted(choices):
        if not group.startswith("hydra/"):
            lines.append(f"  {group}: {', '.join(search_path.options(group))} (now: {choices[group]})")
    return "\n".join(lines)


def main(config_path=_UNSPECIFIED, config_name=None, version_base=_UNSPECIFIED):
    """The decorator. The wrapped task, called with no argument, reads
    sys.argv; called with a config, it runs the task on that config (as
    Hydra's does)."""

    def decorator(task):
        @functools.wraps(task)
        def wrapper(cfg_passthrough=None):
            if cfg_passthrough is not None:
                return task(cfg_passthrough)
            args = _parse_argv(sys.argv[1:])
            if args["version"]:
                print("Hydra 1.3.2 (bench/dlio stand-in)")
                return None
            dirs = []
            path = args["config_path"] or (None if config_path in (None, _UNSPECIFIED) else config_path)
            if path is not None:
                dirs.append(path if os.path.isabs(path) else os.path.join(_task_dir(task), path))
            dirs.extend(os.path.abspath(d) for d in args["config_dir"])
            search_path = SearchPath(dirs)
            register_resolvers()
            try:
                cfg, choices = compose_config(search_path, args["config_name"] or config_name,
                                              args["overrides"], _job_name(task))
            except ConfigCompositionException as e:
                if os.environ.get("HYDRA_FULL_ERROR") == "1":
                    raise
                # Hydra's way: the message alone, and how to see the stack.
                print(f"{e}\n\nSet the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.",
                      file=sys.stderr)
                sys.exit(1)
            if args["help"]:
                print(_help(search_path, choices))
                return None
            if args["cfg"]:
                part = {"job": task_config(cfg), "hydra": OmegaConf.create({"hydra": cfg.hydra}),
                        "all": cfg}[args["cfg"]]
                print(OmegaConf.to_yaml(part, resolve=args["resolve"]))
                return None
            HydraConfig.set_config(cfg)
            output_dir = os.path.abspath(str(OmegaConf.select(cfg, "hydra.run.dir")))
            os.makedirs(output_dir, exist_ok=True)
            with open_dict(cfg):
                cfg.hydra.runtime.output_dir = output_dir
                cfg.hydra.runtime.cwd = os.getcwd()
            _write_record(cfg, output_dir)
            if cfg.hydra.job.chdir:
                os.chdir(output_dir)
            return task(task_config(cfg))

        return wrapper

    return decorator
