"""The stand-in's composition: a primary config and its defaults list, config
groups chosen on the command line, and Hydra's override syntax, on OmegaConf.

Only what DLIO (argonne-lcf/dlio_benchmark) relies on, in Hydra 1.3's
meaning:

* a search path of config directories (the one next to the task's module,
  then each `--config-dir`), searched in that order for every file;
* the primary config's `defaults` list: `_self_`, `group: option` (the
  option's file merged at the package `group`, or where its
  `# @package` header says), `optional group: option`, and
  `override group: option`; groups under `hydra/` are recorded as choices and
  not loaded (Hydra's own help and logging configs: DLIO disables both);
* overrides: `group=option` (choose another file for a group of the defaults
  list), `key=value` (the key must exist), `+key=value` (it must not),
  `++key=value` (either), `~key` (delete); values parsed as Hydra's grammar
  reads them for the common cases: null, booleans in any case, integers,
  floats (`1e-3` too), quoted strings, `[lists]` and `{dicts}`, interpolations
  `${...}` kept as they are; an unquoted comma is a sweep, refused in a run.

Anything else (sweeps, plugins, structured configs) raises an error naming
the stand-in, rather than doing something Hydra would not.
"""

import copy
import os
import re

import yaml
from omegaconf import OmegaConf, open_dict


class ConfigCompositionException(Exception):
    """Hydra's name for a config that cannot be composed as asked."""


class MissingConfigException(IOError, ConfigCompositionException):
    """Hydra's name for a config file that is not in the search path."""


# Hydra's defaults for its own node, before the primary config's `hydra:` key
# and the command line (hydra/conf/hydra_config.py in Hydra 1.3).
HYDRA_DEFAULTS = {
    "run": {"dir": "outputs/${now:%Y-%m-%d}/${now:%H-%M-%S}"},
    "output_subdir": ".hydra",
    "job": {"name": None, "chdir": False, "override_dirname": "", "id": None, "num": None},
    "runtime": {"version": "1.3.2-standin", "cwd": None, "output_dir": None,
                "choices": {}, "config_sources": []},
    "overrides": {"hydra": [], "task": []},
    "mode": "RUN",
}

_MISSING = object()
_OVERRIDE = re.compile(r"^(?P<prefix>\+\+|\+|~)?(?P<key>[A-Za-z_][\w.\-/@]*)(?:=(?P<value>.*))?$", re.S)
_INT = re.compile(r"^[+-]?(?:0|[1-9][0-9_]*)$")
_FLOAT = re.compile(r"^[+-]?(?:(?:[0-9][0-9_]*)?\.[0-9_]+|[0-9][0-9_]*\.?)(?:[eE][+-]?[0-9]+)?$"
                    r"|^[+-]?(?:inf|nan)$", re.I)


def parse_value(text):
    """A command-line value as Hydra's grammar types it (see the module's note)."""
    s = text.strip()
    if s == "":
        return ""
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    low = s.lower()
    if low == "null":
        return None
    if low in ("true", "false"):
        return low == "true"
    if _INT.match(s):
        return int(s.replace("_", ""))
    if _FLOAT.match(s):
        return float(s.replace("_", ""))
    if s[0] in "[{":
        try:
            return yaml.safe_load(s)
        except yaml.YAMLError as e:
            raise ConfigCompositionException(f"hydra stand-in: cannot parse {text!r}: {e}") from e
    if s.startswith("${"):
        return s
    if _top_level_comma(s):
        raise ConfigCompositionException(
            f"Ambiguous value {text!r}: to use it as a list write [{s}], as a string quote it; "
            "sweeps (--multirun) are not part of the hydra stand-in")
    return s


def _top_level_comma(s):
    depth = 0
    for c in s:
        if c in "[{(":
            depth += 1
        elif c in "]})":
            depth -= 1
        elif c == "," and depth == 0:
            return True
    return False


def parse_override(text):
    """(prefix, key, value, has_value) of one command-line override."""
    m = _OVERRIDE.match(text)
    if not m:
        raise ConfigCompositionException(f"hydra stand-in: cannot parse override {text!r}")
    has_value = m.group("value") is not None
    if m.group("prefix") != "~" and not has_value:
        raise ConfigCompositionException(f"Error parsing override {text!r}: missing '=value'")
    value = parse_value(m.group("value")) if has_value else None
    return m.group("prefix") or "", m.group("key"), value, has_value


class SearchPath:
    """Config directories, searched in order; the first that has a file wins."""

    def __init__(self, dirs):
        self.dirs = [os.path.abspath(d) for d in dirs if d]

    def find(self, relpath):
        for d in self.dirs:
            p = os.path.join(d, relpath + ".yaml")
            if os.path.isfile(p):
                return p
        return None

    def is_group(self, group):
        return any(os.path.isdir(os.path.join(d, group)) for d in self.dirs)

    def options(self, group):
        names = set()
        for d in self.dirs:
            g = os.path.join(d, group)
            if os.path.isdir(g):
                names.update(f[:-5] for f in os.listdir(g) if f.endswith(".yaml"))
        return sorted(names)

    def sources(self):
        """Hydra's runtime.config_sources: its own package first, as Hydra lists it."""
        out = [{"path": "hydra.conf", "schema": "pkg", "provider": "hydra"}]
        for i, d in enumerate(self.dirs):
            out.append({"path": d, "schema": "file", "provider": "main" if i == 0 else "command-line"})
        return out


def _load_yaml(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    package = None
    for line in text.splitlines():
        m = re.match(r"^#\s*@package\s+(\S+)", line)
        if m:
            package = m.group(1)
            break
        if line.strip() and not line.lstrip().startswith("#"):
            break
    data = yaml.safe_load(text)
    return (data if data is not None else {}), package


def _defaults_entries(defaults):
    """The defaults list as [group or '_self_', option, override?, optional?]."""
    out = []
    for entry in defaults or []:
        if isinstance(entry, str):
            if entry == "_self_":
                out.append(["_self_", None, False, False])
            elif "/" in entry:
                group, option = entry.rsplit("/", 1)
                out.append([group, option, False, False])
            else:
                raise ConfigCompositionException(
                    f"hydra stand-in: non-group defaults entry {entry!r} is not supported")
        elif isinstance(entry, dict) and len(entry) == 1:
            (key, option), = entry.items()
            words = key.split()
            out.append([words[-1], option, "override" in words[:-1], "optional" in words[:-1]])
        else:
            raise ConfigCompositionException(f"hydra stand-in: bad defaults entry {entry!r}")
    return out


def compose_config(search_path, config_name, overrides, job_name):
    """The whole config (with its `hydra` node), Hydra's way. Returns
    (cfg, choices): choices maps each group to the option chosen."""
    primary_path = search_path.find(config_name) if config_name else None
    if config_name and primary_path is None:
        raise MissingConfigException(
            f"Cannot find primary config '{config_name}'. Check that it's in your config search path "
            f"({', '.join(search_path.dirs)})")
    primary, _ = _load_yaml(primary_path) if primary_path else ({}, None)
    entries = _defaults_entries(primary.pop("defaults", None))

    # `override group: x` in the list replaces the earlier entry of that group.
    chosen = []
    for e in entries:
        if e[2]:
            if not e[0].startswith("hydra/"):
                for c in chosen:
                    if c[0] == e[0]:
                        c[1] = e[1]
                        break
                else:
                    raise ConfigCompositionException(f"Could not override '{e[0]}': not in the defaults list")
            else:
                chosen.append([e[0], e[1], False, e[3]])
        else:
            chosen.append(e)
    if not any(c[0] == "_self_" for c in chosen):
        chosen.append(["_self_", None, False, False])

    parsed = [(text, *parse_override(text)) for text in overrides]
    value_overrides = []
    for text, prefix, key, value, has_value in parsed:
        if "/" in key or ("." not in key and search_path.is_group(key)):
            entry = next((c for c in chosen if c[0] == key), None)
            if prefix == "~":
                chosen = [c for c in chosen if c[0] != key]
            elif entry is not None and prefix != "+":
                entry[1] = value
            elif entry is None and prefix in ("+", "++"):
                chosen.append([key, value, False, False])
            else:
                raise ConfigCompositionException(
                    f"Could not override '{key}'. No match in the defaults list. To append to your "
                    f"default list use +{key}={value}" if entry is None else
                    f"Could not append to config. An item is already at '{key}'.")
        else:
            value_overrides.append((text, prefix, key, value, has_value))

    cfg = OmegaConf.create({"hydra": copy.deepcopy(HYDRA_DEFAULTS)})
    choices = {}
    for group, option, _, optional in chosen:
        if group == "_self_":
            cfg = OmegaConf.merge(cfg, OmegaConf.create(primary))
            continue
        choices[group] = option
        if group.startswith("hydra/") or option is None:
            continue
        path = search_path.find(f"{group}/{option}")
        if path is None:
            if optional:
                continue
            raise MissingConfigException(
                f"In '{config_name}': Could not find '{group}/{option}'\nAvailable options in "
                f"'{group}':\n\t" + "\n\t".join(search_path.options(group)))
        body, package = _load_yaml(path)
        body.pop("defaults", None)
        if package == "_global_":
            node = body
        else:
            target = group.replace("/", ".") if package in (None, "_group_") else package
            node = body
            for part in reversed(target.split(".")):
                node = {part: node}
        cfg = OmegaConf.merge(cfg, OmegaConf.create(node))

    OmegaConf.set_struct(cfg, True)
    for text, prefix, key, value, has_value in value_overrides:
        _apply(cfg, text, prefix, key, value)

    with open_dict(cfg):
        cfg.hydra.job.name = cfg.hydra.job.name or job_name
        cfg.hydra.runtime.choices = choices
        cfg.hydra.runtime.config_sources = search_path.sources()
        cfg.hydra.overrides.task = [p[0] for p in parsed if not p[2].startswith("hydra.")]
        cfg.hydra.overrides.hydra = [p[0] for p in parsed if p[2].startswith("hydra.")]
        cfg.hydra.job.override_dirname = ",".join(sorted(cfg.hydra.overrides.task))
    return cfg, choices


def _apply(cfg, text, prefix, key, value):
    exists = OmegaConf.select(cfg, key, default=_MISSING, throw_on_missing=False) is not _MISSING
    if prefix == "~":
        if not exists:
            raise ConfigCompositionException(f"Could not delete from config. '{key}' does not exist.")
        parent, _, leaf = key.rpartition(".")
        node = OmegaConf.select(cfg, parent) if parent else cfg
        with open_dict(node):
            del node[leaf]
    elif prefix == "+" and exists:
        raise ConfigCompositionException(
            f"Could not append to config. An item is already at '{key}'.")
    elif prefix == "" and not exists:
        raise ConfigCompositionException(
            f"Could not override '{key}'.\nTo append to your config use +{text}\n"
            f"Key '{key}' is not in struct")
    else:
        with open_dict(cfg):
            OmegaConf.update(cfg, key, value, merge=True, force_add=True)


def task_config(cfg):
    """The config the task sees: Hydra's node taken off, still in struct mode."""
    task = copy.deepcopy(cfg)
    with open_dict(task):
        if "hydra" in task:
            del task["hydra"]
    OmegaConf.set_struct(task, True)
    return task
