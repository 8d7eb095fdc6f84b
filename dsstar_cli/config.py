"""Configuration: layered YAML files, environment and flags, merged and validated key by key.

Layers, lowest first: the packaged defaults < the user file (~/.config/dsstar/config.yaml) < the
project file (./dsstar.yaml, else the nearest above: `project_file`) < --config FILE < DSSTAR_* environment variables (one for every key:
`env_name`) < flags. Each layer sets only the keys it names; `Config.sources` says which layer set
each value.

The packaged `default.yaml` is the single source of defaults (configs/default.yaml links to it).
Every other layer may only set keys that exist there, with values of the same kind, so a typo or
a wrong type is an error that names the key instead of a silently ignored setting.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from dsstar_cli.errors import SetupError, UsageError

ROLES = ("analyzer", "planner", "coder", "verifier", "router", "debugger", "finalizer")
ANALYZER_MODES = ("auto", "builtin", "llm")
SANDBOX_TIERS = ("strong", "medium", "basic")
ENGINES = ("duckdb", "spark")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
APP_NAME = "dsstar"
# How the command line spells the keys it can override (for error messages and `sources`).
FLAG_NAMES = {
    "model": "--model",
    "api_base": "--api-base",
    "max_rounds": "--max-rounds",
    "code_timeout_s": "--code-timeout",
    "llm.timeout_s": "--llm-timeout",
    "analyzer.cache": "--no-cache",
    "follow_links": "--follow-links",
    "budget.max_cost_usd": "--max-cost",
    "budget.timeout_s": "--timeout",
    "engine": "--engine",
}

# The environment: every key has a variable, DSSTAR_ and the key in capitals with `_` for `.`
# (llm.timeout_s: DSSTAR_LLM_TIMEOUT_S; see `env_name`). These shorter names, as the flags are spelled
# (--llm-timeout: DSSTAR_LLM_TIMEOUT), came first and still work.
ENV_PREFIX = "DSSTAR_"
ENV_SHORT_NAMES = {
    "DSSTAR_CODE_TIMEOUT": "code_timeout_s",
    "DSSTAR_LLM_TIMEOUT": "llm.timeout_s",
    "DSSTAR_MAX_COST": "budget.max_cost_usd",
    "DSSTAR_TIMEOUT": "budget.timeout_s",
}
# DSSTAR_ variables that are not configuration, so not warned about: the mark of a sandboxed
# script's process, and the settings of dsstar's own tests and benchmarks.
ENV_NOT_CONFIG = ("DSSTAR_SANDBOX", "DSSTAR_BIGDATA_GB", "DSSTAR_BIGDATA_SIZES", "DSSTAR_BENCH_TMP",
                  "DSSTAR_ENGINE_BENCH_ROWS")

# Numeric bounds checked after merging: (low, high) inclusive.
BOUNDS: dict[str, tuple[float, float]] = {
    "max_rounds": (1, 1000),
    "debug_attempts": (0, 20),
    "code_timeout_s": (0.1, 86400),
    "llm.timeout_s": (0.1, 3600),
    "llm.temperature": (0, 2),
    "llm.max_tokens": (1, 10_000_000),
    "llm.retries": (1, 20),
    "llm.retry_max_delay_s": (0, 3600),
    "budget.max_cost_usd": (0.000001, 1_000_000),
    "budget.timeout_s": (1, 7 * 86400),
    "analyzer.max_description_chars": (200, 1_000_000),
    "analyzer.sample_rows": (0, 100),
    "analyzer.max_text_bytes": (1000, 100_000_000),
    "analyzer.max_memory_mb": (128, 1_048_576),
    "analyzer.file_timeout_s": (1, 86400),
    "retriever.max_files": (1, 100_000),
    "retriever.max_description_tokens": (500, 10_000_000),
    "retriever.max_document_tokens": (500, 10_000_000),
    "sandbox.memory_mb": (64, 1_048_576),
    "sandbox.max_run_folder_mb": (1, 10_000_000),
    "sandbox.max_output_bytes": (1000, 1_000_000_000),
    "sandbox.prompt_output_chars": (200, 1_000_000),
    "query.max_rows": (1, 10_000_000),
    "query.max_mb": (1, 4096),
}
# Keys that take any number although their default is written as a whole number.
FLOAT_KEYS = {"analyzer.file_timeout_s", "code_timeout_s", "llm.timeout_s", "llm.temperature", "llm.retry_max_delay_s",
              "budget.max_cost_usd", "budget.timeout_s"}
# Keys whose value may be null in any layer (everything else keeps the default's type).
NULLABLE = {"model", "api_base", "run_dir", "llm.temperature", "llm.max_tokens", "analyzer.cache_dir",
            "budget.max_cost_usd", "budget.timeout_s",
            "retriever.embedding_model", "spark.remote", "spark.token_env"} | {
    f"roles.{r}.model" for r in ROLES
}


class ConfigError(SetupError):
    """A configuration file, key or value is wrong; the message says which and how to fix it."""


class FlagValueError(UsageError):
    """A flag's value is out of range or of the wrong kind: a usage error (exit 2), not a config one."""


@dataclass
class Config:
    """The effective configuration: a flat map of dotted keys plus where each value came from."""

    values: dict[str, Any]
    sources: dict[str, str] = field(default_factory=dict)
    files: list[tuple[str, str]] = field(default_factory=list)  # (path, "user" | "project" | "--config") read

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def model_for(self, role: str) -> str | None:
        """The model a role uses: its own override, else the shared `model`."""
        return self.values.get(f"roles.{role}.model") or self.values["model"]

    @property
    def max_rounds(self) -> int:
        return self.values["max_rounds"]


def _flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(tree, dict):
        return {prefix: tree}
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, dotted))
        else:
            flat[dotted] = value
    return flat


def packaged_default_text() -> str:
    return resources.files("dsstar_cli").joinpath("default.yaml").read_text(encoding="utf-8")


def default_values() -> dict[str, Any]:
    """Every key with its packaged default, flattened to dotted keys."""
    return _flatten(yaml.safe_load(packaged_default_text()))


def user_config_path() -> Path:
    """The per-user config file, in the platform's app dir (what `typer.get_app_dir` gives)."""
    import typer  # Local import: keeps `config` importable without the CLI layer.

    return Path(typer.get_app_dir(APP_NAME)) / "config.yaml"


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where else ""
        raise ConfigError(f"config file {path} is not valid YAML{line}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must be a mapping of keys to values")
    return data


def _check_value(key: str, value: Any, default: Any, origin: str) -> Any:
    """Coerce `value` to the kind of the default, or raise a ConfigError naming the key."""
    if value is None:
        if key in NULLABLE:
            return None
        raise ConfigError(f"{origin}: `{key}` must not be null")
    for name, allowed in (("sandbox.tier", ("auto", *SANDBOX_TIERS)), ("sandbox.require", SANDBOX_TIERS),
                          ("sandbox.strong_backend", ("auto", "namespaces", "bubblewrap"))):
        if key == name and value not in allowed:
            raise ConfigError(f"{origin}: `{name}` must be one of {', '.join(allowed)}, not {value!r}")
    if key == "engine" and value not in ENGINES:
        raise ConfigError(f"{origin}: `engine` must be one of {', '.join(ENGINES)}, not {value!r}")
    if key == "spark.remote" and not (isinstance(value, str) and value.startswith("sc://")):
        raise ConfigError(f"{origin}: `spark.remote` must be a Spark Connect address, sc://host:15002, "
                          f"not {value!r}")
    if key == "spark.token_env" and not (isinstance(value, str) and ENV_NAME.match(value)):
        raise ConfigError(f"{origin}: `spark.token_env` is the NAME of an environment variable holding the "
                          "token (e.g. SPARK_CONNECT_TOKEN), not the token itself")
    if key == "analyzer.mode" and value not in ANALYZER_MODES:
        raise ConfigError(f"{origin}: `analyzer.mode` must be one of {', '.join(ANALYZER_MODES)}, not {value!r}")
    kind = _kind(key, default)
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, str) and value.strip() != ""
    if not ok:
        raise ConfigError(f"{origin}: `{key}` must be {_kind_name(kind)}, not {value!r}")
    low_high = BOUNDS.get(key)
    if low_high and not (low_high[0] <= value <= low_high[1]):
        raise ConfigError(f"{origin}: `{key}` must be between {low_high[0]:g} and {low_high[1]:g}, not {value!r}")
    return value


def _kind(key: str, default: Any) -> type:
    """What a key's values are: bool, int, float or str."""
    return float if key in FLOAT_KEYS else type(default) if default is not None else _nullable_kind(key)


def _nullable_kind(key: str) -> type:
    return {"llm.max_tokens": int}.get(key, float if key in FLOAT_KEYS else str)


def _kind_name(kind: type) -> str:
    return {bool: "true or false", int: "a whole number", float: "a number", str: "a non-empty string"}[kind]


def _apply(values: dict, sources: dict, layer: dict[str, Any], origin: str, defaults: dict) -> None:
    for key, value in layer.items():
        if key not in defaults:
            raise ConfigError(f"{origin}: unknown key `{key}`{_suggest(key, defaults)}")
        values[key] = _check_value(key, value, defaults[key], origin)
        sources[key] = origin


def _suggest(key: str, defaults: dict) -> str:
    import difflib

    close = difflib.get_close_matches(key, list(defaults), n=1)
    return f" (did you mean `{close[0]}`?)" if close else " (see `configs/default.yaml` for every key)"


PROJECT_FILE = "dsstar.yaml"


def config_files(explicit: Path | None, cwd: Path) -> list[tuple[Path, str]]:
    """The files that apply, lowest layer first, each with its layer: the user file, the project file
    (see `project_file`), then --config FILE."""
    if explicit is not None and not explicit.is_file():
        raise ConfigError(f"config file {explicit} does not exist")
    candidates = ((user_config_path(), "user"), (project_file(cwd, explicit), "project"))
    found = [(path, layer) for path, layer in candidates if path is not None and path.is_file()]
    if explicit is not None:
        found = [(path, layer) for path, layer in found if not path.resolve() == explicit.resolve()]
        found.append((explicit, "--config"))
    return found


def project_file(cwd: Path, explicit: Path | None = None, home: Path | None = None) -> Path | None:
    """./dsstar.yaml, else the nearest in a folder above, as git finds .git: up to the home folder
    when `cwd` is in it, else up to /. One above the current folder must be the user's (or root's)
    and writable by no one else: a dsstar.yaml another user left in /tmp could otherwise point
    runs started below it at their server, with the data and the key (unless it is given as `explicit`,
    the --config FILE)."""
    cwd, home = cwd.resolve(), (home or Path.home()).resolve()
    for folder in (cwd, *cwd.parents):
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            if folder != cwd and not (explicit and candidate.resolve() == explicit.resolve()):
                _check_owner(candidate)
            return candidate
        if folder == home:
            break
    return None


def _check_owner(path: Path) -> None:
    st = path.stat()
    if st.st_uid not in (os.getuid(), 0) or st.st_mode & 0o002:
        why = "writable by anyone" if st.st_mode & 0o002 else f"owned by another user (uid {st.st_uid})"
        raise ConfigError(f"refusing {path}, found above the current folder: it is {why}; move it, or pass "
                          "a config file of yours with --config")


def env_name(key: str) -> str:
    """The variable that sets `key`: DSSTAR_ and the key in capitals, `.` as `_`."""
    return ENV_PREFIX + key.replace(".", "_").upper()


def env_names(defaults: dict | None = None) -> dict[str, str]:
    """Every variable that sets a key: variable -> key (the systematic names, then the short ones)."""
    return {**{env_name(key): key for key in (defaults or default_values())}, **ENV_SHORT_NAMES}


def env_layer(env: dict[str, str] | os._Environ, defaults: dict) -> dict[str, tuple[Any, str]]:
    """The DSSTAR_* variables that are set: key -> (value, variable). Numbers and true/false are read as
    YAML reads them, so DSSTAR_MAX_ROUNDS=5 is the number 5 (and null clears a nullable number)."""
    layer: dict[str, tuple[Any, str]] = {}
    for name, key in env_names(defaults).items():
        text = env.get(name, "")
        if not text.strip():
            continue
        value: Any = text
        if _kind(key, defaults[key]) is not str:
            try:
                value = yaml.safe_load(text)
            except yaml.YAMLError:
                value = text
        if key in layer and layer[key][0] != value:
            raise ConfigError(f"env {layer[key][1]} and {name} both set `{key}`, differently: unset one")
        layer.setdefault(key, (value, name))
    return layer


def unknown_env_warnings(env: dict[str, str] | os._Environ) -> list[str]:
    """One line for each DSSTAR_* variable that sets nothing (a typo would otherwise be ignored in
    silence), naming the closest that does. Only names are shown: a value could be a secret."""
    import difflib

    names = sorted(name for name in env if name.startswith(ENV_PREFIX) and name not in ENV_NOT_CONFIG)
    known = env_names() if names else {}  # Most starts set none: no need to read the defaults then.
    lines = []
    for name in names:
        if name not in known:
            # Compared without the prefix, which every name shares and would make any two look alike.
            close = difflib.get_close_matches(name[len(ENV_PREFIX):], [n[len(ENV_PREFIX):] for n in known], n=1)
            hint = f"did you mean {ENV_PREFIX}{close[0]}?" if close else ("each key has one: llm.timeout_s is "
                                                                        "DSSTAR_LLM_TIMEOUT_S")
            lines.append(f"dsstar: warning: {name} is not a dsstar setting, ignored ({hint})")
    return lines


def load_config(
    config_file: Path | None = None,
    overrides: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> Config:
    """Merge, key by key: defaults < user file < project file < --config < DSSTAR_* < flags."""
    env = os.environ if env is None else env
    defaults = default_values()
    values, sources = dict(defaults), {key: "default" for key in defaults}
    files = config_files(config_file, cwd or Path.cwd())
    for path, _ in files:
        _apply(values, sources, _flatten(_read_yaml(path)), str(path), defaults)
    for key, (value, name) in env_layer(env, defaults).items():
        _apply(values, sources, {key: value}, f"env {name}", defaults)
    _apply_flags(values, sources, overrides or {}, defaults)
    return Config(values, sources, [(str(path), layer) for path, layer in files])


def _apply_flags(values: dict, sources: dict, flags: dict[str, Any], defaults: dict) -> None:
    for key, value in flags.items():
        if value is not None:
            origin = f"flag {FLAG_NAMES.get(key, key)}"
            try:
                _apply(values, sources, {key: value}, origin, defaults)
            except ConfigError as exc:
                raise FlagValueError(str(exc)[len("flag "):]) from exc


def with_flags(config: Config, flags: dict[str, Any]) -> Config:
    """`config` with the flags that were given (not None) on top, validated as `load_config` does."""
    values, sources = dict(config.values), dict(config.sources)
    _apply_flags(values, sources, flags, default_values())
    return Config(values, sources, list(config.files))


def commented_default_text() -> str:
    """The packaged defaults with every key commented out: `config init` writes this, so a new file
    pins nothing and each key takes effect only once its line (and its section's) is uncommented."""
    lines = []
    for line in packaged_default_text().splitlines():
        lines.append(line if not line.strip() or line.lstrip().startswith("#") else f"# {line}")
    header = ("# dsstar.yaml: every key is commented out, so the defaults (and your user config) apply.\n"
              "# Uncomment a key to change it (for a nested key, also uncomment its section line).\n\n")
    return header + "\n".join(lines) + "\n"
