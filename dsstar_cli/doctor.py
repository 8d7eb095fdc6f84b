"""`dsstar doctor` and `dsstar config show`: what dsstar would use, and whether it will work."""

from __future__ import annotations

import os
import re
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass

from dsstar_cli.config import ROLES, Config
from dsstar_cli.runlog import run_root_candidates, unwritable


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def mask_url(url: str | None) -> str | None:
    """Hide credentials embedded in a URL (https://user:secret@host)."""
    return re.sub(r"//[^/@]+@", "//****@", url) if url else url


def shown_value(key: str, value) -> object:
    return mask_url(value) if key == "api_base" else value


def models_in_use(config: Config) -> list[str]:
    return sorted({m for m in (config.model_for(role) for role in ROLES) if m})


def probe_server(api_base: str, timeout_s: float = 3.0) -> int | str:
    """`GET <api_base>/models` without a key: the HTTP status (any status means a server is there), or
    why nothing answered."""
    url = api_base.rstrip("/") + "/models"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError) as exc:
        return str(getattr(exc, "reason", exc))


def check_api_base(api_base: str, probed: int | str) -> Check:
    """Any HTTP answer (even 401 or 404) means a server is there; no answer means it is not."""
    if isinstance(probed, str):
        return Check("api_base", False, f"cannot reach {mask_url(api_base)}: {probed}; is the server running?")
    return Check("api_base", True, f"{mask_url(api_base)} answers")


REFUSED = (401, 403)  # What a server that needs a key answers a request without one.


def check_credentials(model: str, api_base: str | None, probed: int | str | None) -> Check:
    """What the environment holds for `model`'s key, said as found: which variable is set or not,
    and, for a custom server, whether one is sent and whether the server took a request without
    one (`probed`: see probe_server). A key's value is never tried against the provider."""
    name = f"credentials {model}"
    found, missing = keys_in_environment(model)
    if api_base:  # The server's address (OLLAMA_API_BASE, ...) is what --api-base gives: not a key.
        missing = [variable for variable in missing if "BASE" not in variable and "ENDPOINT" not in variable]
    variable = " or ".join(missing) if missing else (key_variable(model) or "its key") if found else None
    if not api_base:
        if missing:
            return Check(name, False, f"set {variable}")
        return Check(name, True, f"{variable} is set (value hidden; the first call tries it)" if variable
                     else "litellm knows no key variable for this provider: nothing to check")
    where = mask_url(api_base)
    refused = probed in REFUSED
    if not variable:
        return Check(name, not refused, f"no key variable known for this provider; {where} " +
                     (f"refused a request without a key (HTTP {probed})" if refused else "gets none"))
    if missing and refused:
        return Check(name, False, f"{variable} is not set and {where} refused a request without a key "
                                  f"(HTTP {probed}): set {variable}")
    if missing:
        took = "; it answered a request without one" if probed == 200 else ""
        return Check(name, True, f"{variable} is not set: no key of yours is sent to {where} (right for a "
                                 f"server that needs none){took}")
    needs = (f"; it refuses requests without one (HTTP {probed})" if refused
             else "; it answered a request without one, so it may need none" if probed == 200 else "")
    return Check(name, True, f"{variable} is set (value hidden) and is sent to {where}{needs}")


def keys_in_environment(model: str) -> tuple[bool, list[str]]:
    """Whether the variables litellm wants for `model`'s provider are set, and those missing (both
    empty when litellm knows no key for it: a local provider, or one it cannot tell)."""
    from dsstar_cli import model as model_mod

    try:
        report = model_mod.import_litellm().validate_environment(model=model)
    except Exception:
        return False, []
    return bool(report.get("keys_in_environment")), list(report.get("missing_keys") or [])


def key_variable(model: str) -> str | None:
    """The set environment variable that holds `model`'s key (<PROVIDER>_API_KEY), or None."""
    provider = provider_of(model) or model.split("/")[0]
    variable = f"{provider.upper()}_API_KEY"
    return variable if os.environ.get(variable) else None


def check_run_dir(config: Config) -> Check:
    """Where run folders go. The data folder is not known here: a run also moves them out of it."""
    configured, *fallbacks = run_root_candidates(config["run_dir"])
    why = unwritable(configured)
    if why is None:
        return Check("run_dir", True, f"run folders go under {configured.resolve()} "
                                      "(elsewhere when that is inside the data folder)")
    usable = next((root for root in fallbacks if unwritable(root) is None), None)
    if usable is None:
        return Check("run_dir", False, f"cannot write run folders under {configured}: {why}, nor under "
                                       f"{' or '.join(map(str, fallbacks))}; set `run_dir` to a writable folder")
    return Check("run_dir", True, f"cannot write under {configured} ({why}): run folders go under "
                                  f"{usable.resolve()} instead")


def run_checks(config: Config) -> list[Check]:
    from dsstar_cli import model as model_mod  # Lazy: imports litellm.

    checks = [Check("python", sys.version_info >= (3, 11), sys.version.split()[0])]
    names = models_in_use(config)
    probed = probe_server(config["api_base"]) if config["api_base"] else None
    if not names:
        checks.append(Check("model", False, "no model configured: pass --model, set DSSTAR_MODEL or `model`"))
    for name in names:
        try:
            model_mod.check_model_id(name)
        except model_mod.ModelError as exc:
            checks.append(Check(f"model {name}", False, str(exc)))
            continue
        checks.append(check_credentials(name, config["api_base"], probed))
    if config["api_base"]:
        checks.append(check_api_base(config["api_base"], probed))
    checks.append(check_sandbox(config))
    checks.append(check_engine(config))
    checks.append(check_run_dir(config))
    return checks


def check_sandbox(config: Config) -> Check:
    """Which isolation tiers this machine has, and whether sandbox.tier / sandbox.require can be met."""
    from dsstar_cli.errors import SetupError
    from dsstar_cli.sandbox import memory_bound, tiers

    found = tiers.probe()
    listing = "; ".join(f"{t}: {'yes' if found.available.get(t) else 'no'} ({found.details.get(t)})"
                        for t in tiers.TIERS)
    try:
        chosen = tiers.choose(config["sandbox.tier"], config["sandbox.require"])
    except SetupError as exc:
        return Check("sandbox", False, f"{exc} [{listing}]")
    hint = "" if chosen == "strong" else f" — for the strong tier, {tiers.HOW_TO_GET_STRONG}"
    warning = tiers.auto_warning(config["sandbox.tier"], chosen)
    if warning:
        hint = f" — warning: {warning}"
    return Check("sandbox", True, f"{chosen}{hint} [{listing}]; {memory_bound.how_bounded()}")


def check_engine(config: Config) -> Check:
    """Where scripts' queries run. With Spark: connect, and say the version and what the session
    sees (its catalog and databases), or the one line why not."""
    from dsstar_cli import engine
    from dsstar_cli.errors import SetupError

    try:
        found = engine.settings(config)
        if not found.is_spark:
            import duckdb

            return Check("engine", True, f"duckdb {duckdb.__version__}, embedded: scripts query the data folder "
                                         "inside their sandbox (dsstar.sql)")
        from dsstar_cli.engine.spark import SparkEngine

        spark = SparkEngine.connect(found)
    except SetupError as exc:
        return Check("engine", False, str(exc))
    try:
        catalog, databases = spark.catalog_summary()
    except Exception as exc:  # noqa: BLE001 - connected, but the catalog would not say: still one line.
        return Check("engine", True, f"spark {spark.version} at {found.shown_remote()}; its catalog would not "
                                     f"list: {spark.error_text(exc)}")
    finally:
        spark.close()
    return Check("engine", True, f"spark {spark.version} at {found.shown_remote()}: catalog {catalog}, "
                                 f"{len(databases)} database(s) ({', '.join(databases[:5])}"
                                 f"{', ...' if len(databases) > 5 else ''}); queries go from dsstar's process, "
                                 "scripts get no network")


def provider_of(model: str) -> str | None:
    """The litellm provider serving `model` (openai, gemini, ...), or None when litellm cannot tell."""
    from dsstar_cli import model as model_mod

    litellm = model_mod.import_litellm()
    try:
        return litellm.get_llm_provider(model=model)[1]
    except Exception:
        return None


def endpoint_in_use(model: str, api_base: str | None, api_base_source: str = "config",
                    env: dict | None = None) -> tuple[str, str]:
    """The server `model`'s calls go to, and why: `api_base`, else the provider's own environment
    variable (OPENAI_API_BASE, ... which litellm reads), else the provider's default endpoint."""
    env = os.environ if env is None else env
    if api_base:
        return mask_url(api_base) or api_base, api_base_source
    provider = provider_of(model) or model.split("/")[0]
    for name in (f"{provider.upper()}_API_BASE", f"{provider.upper()}_BASE_URL"):
        if env.get(name):
            return mask_url(env[name]) or env[name], f"env {name}"
    return f"{provider}'s default endpoint", "default"


def credential_variable(model: str, api_base: str | None, env: dict | None = None) -> str:
    """Which environment variable holds `model`'s key, and whether it is set (never its value)."""
    from dsstar_cli import model as model_mod

    env = os.environ if env is None else env
    missing = model_mod.missing_credentials(model, None)
    if missing:
        either = " or ".join(missing)
        if api_base:
            return f"none needed for a custom api_base ({either} not set)"
        return f"missing: set {either}"
    provider = provider_of(model) or model.split("/")[0]
    name = f"{provider.upper()}_API_KEY"
    if env.get(name):
        return f"{name} (set, value hidden)"
    return "found in the environment (value hidden)"


def credential_status(config: Config) -> dict[str, dict[str, str]]:
    """For `config show`: per model, the endpoint its calls go to and the credential variable used
    (never its value)."""
    status = {}
    for name in models_in_use(config):
        url, source = endpoint_in_use(name, config["api_base"], config.sources.get("api_base", "config"))
        status[name] = {"endpoint": url, "endpoint_source": source,
                        "credentials": credential_variable(name, config["api_base"])}
    return status
