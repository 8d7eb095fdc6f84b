"""Is the configured model usable? Checked on a thread, while the run starts.

Knowing whether a model id exists, whether it has a price and which key it needs takes litellm,
whose import costs seconds. Nothing before the first model call needs it: the header, the run
folder, the sandbox worker's start and the analysis go ahead at once, and the check (then
litellm's first-call set-up) runs beside them. The first model call waits for it (`wait`), and a
failed check ends the run with the same one line and exit code as before, as soon as it is known,
not only when the model is first called (`HeldEvents`).
"""

from __future__ import annotations

import threading

from dsstar_cli import model as model_mod
from dsstar_cli.config import ROLES, Config
from dsstar_cli.errors import DsstarError, SetupError, UsageError
from dsstar_cli.events import Event, Sink


def check_model_set(config: Config) -> None:
    """The one check that needs no litellm: some model is configured."""
    if None in {config.model_for(role) for role in ROLES}:
        raise SetupError("no model configured: pass --model (e.g. --model openai/gpt-4.1), "
                         "set DSSTAR_MODEL, or set `model` in dsstar.yaml")


def check_model(name: str, config: Config) -> list[str]:
    """One model: fail when its id is unknown or --max-cost meets it unpriced; return the credential
    variables it still needs ([] when it is ready to call). Imports litellm."""
    try:
        model_mod.check_model_id(name)
    except model_mod.ModelConfigError as exc:
        raise SetupError(str(exc)) from exc
    if config["budget.max_cost_usd"] is not None and not model_mod.is_priced(name):
        raise UsageError(f"--max-cost needs a model with a price in litellm's price map, and {name} has none; "
                         "use --timeout or --max-rounds to bound the run instead")
    return model_mod.missing_credentials(name, config["api_base"])


def check_models(config: Config) -> None:
    """Fail when no model is set, a model id is unknown, --max-cost meets an unpriced model, or
    credentials are missing."""
    check_model_set(config)
    for name in sorted({config.model_for(role) for role in ROLES}):
        missing = check_model(name, config)
        if missing:
            either = " or ".join(missing)
            raise SetupError(f"no credentials for {name}: set the environment variable {either} "
                             "(or pass --api-base for a server that needs no key)")


class ModelCheck:
    """`check_models`, then litellm's first-call set-up (model.warm_up), on a thread."""

    def __init__(self, config: Config):
        check_model_set(config)  # Cheap, so said at once, before any work.
        self._config = config
        self._error: DsstarError | None = None
        self._checked = threading.Event()
        self._thread = threading.Thread(target=self._check, name="dsstar-model-check", daemon=True)

    def start(self) -> None:
        """Start checking; the caller does so once its first output is out (the import competes
        with the main thread for the interpreter)."""
        self._thread.start()

    def _check(self) -> None:
        try:
            check_models(self._config)
        except DsstarError as exc:
            self._error = exc
        except Exception as exc:  # litellm itself failed to load: say so, never a traceback.
            self._error = SetupError(f"cannot load litellm to check the model: {type(exc).__name__}: {exc}")
        finally:
            self._checked.set()
        if self._error is None:
            model_mod.warm_up()  # The first call's set-up; that call waits for it only if it must.

    def failed(self) -> DsstarError | None:
        """The check's error once it is known to have failed; None while it runs or when it passed."""
        return self._error

    def passed(self) -> bool:
        return self._checked.is_set() and self._error is None

    def wait(self) -> None:
        """Block until the check is done (starting it if it was not); raise its error if it failed."""
        if self._thread.ident is None:
            self._thread.start()
        self._checked.wait()
        if self._error is not None:
            raise self._error

    def join_if_settled(self, timeout: float) -> None:
        """On the way out, once the check has a verdict: what is left is the first call's set-up (a
        thread still importing at interpreter shutdown holds the import lock, and shutdown could wait
        on it forever). A run stopped (Ctrl-C) while the check still runs does not wait for litellm's
        import: the command line exits without interpreter shutdown then (cli.exit_now)."""
        if self._thread.ident is not None and self._checked.is_set():
            self._thread.join(timeout)

    def held(self, emit: Sink) -> HeldEvents:
        """`emit` for the work done while the check runs (the analysis): see HeldEvents."""
        return HeldEvents(self, emit)


class HeldEvents:
    """Events held back while the model check runs, then passed on in order once it has passed. When
    it fails they are dropped, and the next event raises its error: a long analysis stops for a
    missing key as soon as that is known, and a setup error stays one line after the header."""

    def __init__(self, check: ModelCheck, emit: Sink):
        self._check, self._emit = check, emit
        self._held: list[Event] = []
        self._lock = threading.Lock()  # The analysis emits from its worker threads.

    def __call__(self, event: Event) -> None:
        with self._lock:
            error = self._check.failed()
            if error is not None:
                self._held.clear()
                raise error
            self._held.append(event)
            if self._check.passed():
                self._flush()

    def release(self) -> None:
        """Wait for the check; pass the held events on (or raise its error)."""
        self._check.wait()
        with self._lock:
            self._flush()

    def _flush(self) -> None:
        held, self._held = self._held, []
        for event in held:
            self._emit(event)
