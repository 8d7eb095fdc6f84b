"""The chat-model seam: one small protocol, the litellm adapter, and a scripted fake for tests.

Everything above this module sees only `ChatModel.complete(messages, role=..., deadline=..., stop=...)
-> Reply`, the `ModelError` family and `RunDeadline`, so the loop is tested with `ScriptedModel` and
no network, while the real path (litellm over HTTP) is tested end to end against a local
OpenAI-compatible server.
"""

from __future__ import annotations

import logging
import os
import random
import re
import socket
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from dsstar_cli.deadlines import CallTimedOut, RunDeadline, bounded_call, earliest, pause
from dsstar_cli.errors import stop_signal
from dsstar_cli.events import Event, Sink

Messages = list[dict[str, str]]

# Local-server model ids accept any key; the OpenAI client still insists on one being set.
PLACEHOLDER_KEY = "dsstar-no-key"
RETRY_ATTEMPTS = 4        # Defaults; `llm.retries` and `llm.retry_max_delay_s` in the config.
RETRY_BASE_DELAY_S = 1.0
RETRY_MAX_DELAY_S = 30.0


@dataclass
class Reply:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    model: str = ""
    cached_input_tokens: int = 0  # Of input_tokens, those the provider served from its prompt cache.


class ChatModel(Protocol):
    """`deadline` (a time.monotonic() value) bounds the call, retries included: past it the call is
    abandoned with RunDeadline. `stop`, once set (from another thread), ends it with the signal's exception.
    `emit` hears a `retry` event for every failed attempt, as it happens (see LiteLLMModel.complete)."""

    name: str

    def complete(self, messages: Messages, *, role: str, deadline: float | None = None,
                 stop: threading.Event | None = None, emit: Sink | None = None) -> Reply: ...


class ModelError(Exception):
    """A model call failed for good; the message says what to fix."""

    kind = "model_error"


class ModelConfigError(ModelError):
    """Bad credentials, unknown model or a request the provider refuses: retrying cannot help."""

    kind = "model_config"


class ModelUnreachable(ModelError):
    """The provider could not be reached or kept failing after every retry."""

    kind = "model_unreachable"


class ContextTooLong(ModelError):
    """The prompt is over the model's context window; the caller may shrink it and ask again."""

    kind = "context_window"


# --------------------------------------------------------------------------------------------
# litellm adapter
# --------------------------------------------------------------------------------------------


def import_litellm():
    """Import litellm quietly and offline.

    Without these variables importing litellm fetches a price list from the internet, loads
    stray `.env` files and prints to stdout, which would corrupt `--json` output.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    # dsstar makes no async calls, so litellm has no async clients to close at exit; its clean-up
    # would import aiohttp there to find that out (~1.3 s on this project's 2-core machine).
    litellm._async_client_cleanup_registered = True
    litellm.num_retries = 0  # Our own retry loop counts attempts (see LiteLLMModel.complete).
    _quiet_libraries()
    return litellm


# What litellm's first call imports on its own (measured with cProfile: ~70 % of that call's set-up is
# the OpenAI SDK's resources and litellm's proxy types): imported ahead, on the models' set-up thread.
FIRST_CALL_MODULES = ("openai.resources", "litellm.proxy.openai_files_endpoints.common_utils")


def warm_up() -> None:
    """Do litellm's first-call set-up now (it is imports), so the first model call does not pay it.
    Run on a thread by model_check.ModelCheck, once the model is known to be usable."""
    import importlib

    import_litellm()
    for name in FIRST_CALL_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # A litellm without that module: its first call simply does the work itself.
            pass


# What the libraries under litellm would print on their own: warnings raised in their modules (e.g.
# pydantic's "serializer warnings" for a reply with a malformed `usage`) and their log records. What
# went wrong reaches the user once, as a ModelError's message (see classify_error).
QUIET_MODULES = r"(litellm|pydantic|pydantic_core|openai|httpx|httpcore|anthropic|google)(\.|$)"
QUIET_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx", "httpcore", "openai")


def _quiet_libraries() -> None:
    """Silence the model libraries at their source. A filter on the warnings' modules rather than a
    `catch_warnings` around each call: that one changes process-wide state and is not thread-safe,
    and batch mode calls from many threads. LITELLM_LOG set by the user keeps litellm's logging."""
    global _quiet
    if _quiet:
        return
    warnings.filterwarnings("ignore", module=QUIET_MODULES)
    if not os.environ.get("LITELLM_LOG"):
        for name in QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    _quiet = True


_quiet = False


def missing_credentials(model: str, api_base: str | None) -> list[str]:
    """Environment variables the model still needs, [] when it is ready to call.

    A custom `api_base` (a local server or proxy) may need no key at all, so it is never blocked.
    """
    if api_base:
        return []
    litellm = import_litellm()
    try:
        report = litellm.validate_environment(model=model)
    except Exception:  # litellm raises for unknown providers; the call itself will say more.
        return []
    return [] if report.get("keys_in_environment") else list(report.get("missing_keys") or [])


def check_model_id(model: str) -> None:
    """Raise ModelConfigError when litellm cannot tell which provider serves `model`."""
    litellm = import_litellm()
    try:
        litellm.get_llm_provider(model=model)
    except Exception as exc:
        raise ModelConfigError(
            f"unknown model {model!r}: use a litellm id with its provider, "
            "e.g. openai/gpt-4.1, gemini/gemini-2.5-pro, anthropic/claude-sonnet-4-5, ollama/llama3"
        ) from exc


class LiteLLMModel:
    """Any provider litellm supports, with our own bounded retry on transient failures."""

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        timeout_s: float = 180,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sleep: Callable[[float], None] | None = None,
        attempts: int = RETRY_ATTEMPTS,
        max_delay_s: float = RETRY_MAX_DELAY_S,
    ):
        self.name = model
        self.attempts = attempts
        self.max_delay_s = max_delay_s
        self.api_base = api_base
        self.timeout_s = timeout_s
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._sleep = sleep  # Tests record the backoff instead of waiting it (then no deadline applies to it).

    def _request_args(self, messages: Messages) -> dict:
        messages = with_images(messages, accepts_images(self.name))
        if uses_cache_control(self.name):
            messages = with_cache_breakpoints(messages)
        args: dict = {"model": self.name, "messages": messages, "timeout": self.timeout_s, "max_retries": 0}
        if self.api_base:
            args["api_base"] = self.api_base
            if self.name.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
                args["api_key"] = PLACEHOLDER_KEY
        if self.temperature is not None:
            args["temperature"] = self.temperature
        if self.max_tokens is not None:
            args["max_tokens"] = self.max_tokens
        return args

    def complete(self, messages: Messages, *, role: str, deadline: float | None = None,
                 stop: threading.Event | None = None, emit: Sink | None = None) -> Reply:
        """Every attempt is bounded by `timeout_s` of wall clock (and all of them by `deadline`).
        Each failed attempt worth retrying is told to `emit` before the wait, so a user watching a
        silent server sees why nothing moves (issue 23)."""
        litellm = import_litellm()
        args = self._request_args(messages)
        for attempt in range(1, self.attempts + 1):
            limit = time.monotonic() + self.timeout_s
            cause: Exception | None = None
            try:
                response = bounded_call(lambda: litellm.completion(**args), earliest(limit, deadline), stop)
                return self._reply(litellm, response)
            except CallTimedOut:
                if deadline is not None and deadline <= limit:
                    raise RunDeadline() from None
                error: ModelError | _Transient = _Transient(timed_out(self.name, self.api_base, self.attempts),
                                                            what=f"no answer within {self.timeout_s:g} s")
            except Exception as exc:  # Classified below; nothing escapes unclassified.
                cause = exc
                error = classify_error(litellm, exc, self.name, self.api_base, self.attempts, self.timeout_s)
            if not isinstance(error, _Transient):
                raise error from cause
            delay = None if attempt == self.attempts else backoff_delay(attempt, error.retry_after, self.max_delay_s)
            if emit is not None:
                emit(retry_event(role, self.name, attempt, self.attempts, error, delay))
            if delay is None:
                raise error.final from cause
            if self._sleep:
                self._sleep(delay)
            else:
                pause(delay, deadline, stop)
        raise AssertionError("unreachable")

    def _reply(self, litellm, response) -> Reply:
        choices = getattr(response, "choices", None) or []
        text = (choices[0].message.content or "") if choices else ""
        usage = getattr(response, "usage", None)
        text = text if isinstance(text, str) else str(text)
        return Reply(
            # JSON may carry lone surrogates ("\udcff"): not text any file or terminal can hold.
            text=text.encode("utf-8", errors="replace").decode("utf-8"),
            input_tokens=_count(getattr(usage, "prompt_tokens", 0)),
            output_tokens=_count(getattr(usage, "completion_tokens", 0)),
            cost_usd=_price(litellm, self.name, response),
            model=self.name,
            cached_input_tokens=_cached(usage),
        )


def _cached(usage: Any) -> int:
    """Cached input tokens as litellm reports them (OpenAI's `prompt_tokens_details.cached_tokens`,
    Anthropic's cache reads mapped to it); 0 when absent or not a count."""
    details = getattr(usage, "prompt_tokens_details", None)
    if isinstance(details, dict):
        return _count(details.get("cached_tokens"))
    return _count(getattr(details, "cached_tokens", 0))


# Where the run's shared context is split into cacheable blocks (roles/context.py's TABLES_HEADING).
CACHE_SPLIT = "\n\n# Data files"


def accepts_images(model: str) -> bool:
    """litellm's word on whether `model` takes images in a message (False when it does not know it)."""
    try:
        return bool(import_litellm().supports_vision(model=model))
    except Exception:  # noqa: BLE001 - an unknown model, or a map without the field: text only.
        return False


def with_images(messages: Messages, accepted: bool) -> Messages:
    """The messages as sent: a message's `images` (PNG data URIs, the verifier's figures) become
    image parts after its text for a model that accepts images, and are dropped for any other."""
    sent = []
    for message in messages:
        images = message.get("images")
        message = {key: value for key, value in message.items() if key != "images"}
        if images and accepted:
            message["content"] = [{"type": "text", "text": message["content"]}] + [
                {"type": "image_url", "image_url": {"url": uri}} for uri in images]
        sent.append(message)
    return sent


def uses_cache_control(model: str) -> bool:
    """Anthropic's models cache only what a request marks with `cache_control` (litellm passes it on);
    OpenAI and Gemini cache long identical prefixes by themselves."""
    name = model.lower()
    return name.startswith("anthropic/") or "claude" in name


def with_cache_breakpoints(messages: Messages) -> list[dict]:
    """The system message (the run's shared context) as content blocks marked for caching: the part
    every role shares, then the file descriptions, so both prefixes are cached."""
    if not messages or messages[0].get("role") != "system":
        return messages
    text = messages[0]["content"]
    at = text.find(CACHE_SPLIT)
    pieces = [text[:at], text[at:]] if at > 0 else [text]
    blocks = [{"type": "text", "text": piece, "cache_control": {"type": "ephemeral"}} for piece in pieces]
    return [{"role": "system", "content": blocks}, *messages[1:]]


def _count(value: Any) -> int:
    """A token count as a server reported it; 0 for anything that is not a count (never a crash)."""
    try:
        count = int(value or 0)
    except (TypeError, ValueError, OverflowError):
        return 0
    return count if 0 <= count < 10**12 else 0


def is_priced(model: str) -> bool:
    """True when litellm's offline price map knows what the model costs."""
    try:
        return bool(import_litellm().get_model_info(model).get("input_cost_per_token"))
    except Exception:
        return False


def _price(litellm, model: str, response) -> float | None:
    """Dollars from litellm's offline price map; None for an unpriced model, never a guess."""
    if not is_priced(model):
        return None
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:
        return None


@dataclass
class _Transient:
    """A failure worth retrying; `final` is what to raise when the retries run out, `what` what
    happened to this attempt in a few words, with the HTTP `status` when the server sent one."""

    final: ModelError
    retry_after: float | None = None
    what: str = "failed"
    status: int | None = None


def retry_event(role: str, model: str, attempt: int, attempts: int, error: _Transient,
                wait_s: float | None) -> Event:
    """One failed attempt: what happened, which attempt of how many, and the wait before the next
    (None: it was the last one, the call fails with `error.final`)."""
    return Event("retry", {"role": role, "model": model, "attempt": attempt, "attempts": attempts,
                           "error": error.what, "status": error.status,
                           "wait_s": None if wait_s is None else round(wait_s, 2)})


def backoff_delay(attempt: int, retry_after: float | None, max_delay_s: float = RETRY_MAX_DELAY_S) -> float:
    """Exponential backoff with jitter, or the server's Retry-After when it gives one (both capped)."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), max_delay_s)
    return min(RETRY_BASE_DELAY_S * 2 ** (attempt - 1), max_delay_s) * random.uniform(0.5, 1.0)


def _retry_after(exc: Exception) -> float | None:
    """Seconds the server asked us to wait. litellm keeps the real headers beside its own response."""
    for headers in (getattr(exc, "litellm_response_headers", None), getattr(getattr(exc, "response", None), "headers", None)):
        try:
            return float((headers or {}).get("retry-after"))
        except (TypeError, ValueError):
            continue
    return None


def classify_error(litellm, exc: Exception, model: str, api_base: str | None,
                   attempts: int = RETRY_ATTEMPTS, timeout_s: float | None = None) -> ModelError | _Transient:
    """Turn a provider exception into one short message a user can act on.

    The one place where library exceptions become words: no library class name, warning or
    traceback text gets through (litellm puts whole tracebacks into some of its messages)."""
    where = f" at {_masked(api_base)}" if api_base else ""
    detail = short_detail(exc)
    status = _status_code(exc)
    if isinstance(exc, litellm.ContextWindowExceededError) or "context length" in detail.lower() \
            or "context_length_exceeded" in str(exc):
        return ContextTooLong(f"the prompt is longer than {model}'s context window ({detail})")
    if isinstance(exc, litellm.AuthenticationError) or getattr(exc, "status_code", None) in (401, 403):
        return ModelConfigError(f"the provider rejected the credentials for {model}{where}: check its API key ({detail})")
    if isinstance(exc, litellm.NotFoundError):
        return ModelConfigError(f"model {model!r} was not found{where}: check the model name ({detail})")
    if isinstance(exc, litellm.RateLimitError):
        return _Transient(ModelUnreachable(f"{model} kept rate-limiting after {attempts} attempts"), _retry_after(exc),
                          f"HTTP {status or 429}: rate-limited", status or 429)
    if isinstance(exc, litellm.Timeout):
        waited = f"no answer within {timeout_s:g} s" if timeout_s else "no answer in time"
        return _Transient(timed_out(model, api_base, attempts), what=waited)
    if "invalid response object" in str(exc).lower():  # litellm could not read the reply (e.g. its `usage`).
        return _Transient(ModelUnreachable(f"{model}{where} kept sending replies that are not valid chat "
                                           f"completions (e.g. a malformed `usage` field), {attempts} attempt(s)"),
                          what="unreadable reply: not a valid chat completion")
    network = network_failure(exc, bool(api_base))
    if network:
        return _Transient(ModelUnreachable(f"cannot reach {model}{where} after {attempts} attempt(s): {network}"),
                          what=f"cannot connect: {network.split(';')[0]}")
    # litellm reports a broken connection as a server error whose text says only "Connection error".
    if isinstance(exc, litellm.APIConnectionError) or "connection error" in detail.lower():
        inner = short_detail(_innermost(exc))
        return _Transient(ModelUnreachable(f"the connection to {model}{where} kept failing after {attempts} "
                                           f"attempt(s): {inner}"), what=f"connection broken: {inner[:120]}")
    # litellm's words for a 200 whose body is not JSON (an HTML error page from a proxy); it calls it a 500.
    if "invalid response from llm endpoint" in detail.lower():
        return _Transient(ModelUnreachable(f"{model}{where} kept failing (server error): {detail}"),
                          what="unreadable reply: not JSON")
    if isinstance(exc, (litellm.InternalServerError, litellm.ServiceUnavailableError, litellm.BadGatewayError)):
        return _Transient(ModelUnreachable(f"{model}{where} kept failing (server error): {detail}"),
                          what=f"HTTP {status}: server error" if status else "server error", status=status)
    if isinstance(exc, litellm.BadRequestError):
        return ModelConfigError(f"{model}{where} refused the request: {detail}")
    if isinstance(exc, litellm.APIError):
        return _Transient(ModelUnreachable(f"{model}{where} answered with an error: {detail}"),
                          what=f"HTTP {status}: error" if status else "error reply", status=status)
    return ModelError(f"calling {model}{where} failed: {detail}")


def _status_code(exc: Exception) -> int | None:
    """The HTTP status litellm recorded for the failure, None when it has none that is one."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) and 100 <= status < 600 else None


def timed_out(model: str, api_base: str | None, attempts: int) -> ModelUnreachable:
    where = f" at {_masked(api_base)}" if api_base else ""
    return ModelUnreachable(f"{model}{where} did not answer in time after {attempts} attempt(s) "
                            "(raise --llm-timeout if it is just slow)")


_TRACEBACK = "Traceback (most recent call last)"
# "litellm.InternalServerError: InternalServerError: OpenAIException - ": the libraries' names for their errors.
_ERROR_NAMES = re.compile(r"^(?:\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\s*[:-]\s*)+")
_SERVER_MESSAGE = re.compile(r"""["']message["']\s*:\s*["']((?:[^"'\\]|\\.){1,300})["']""")


def short_detail(exc: BaseException) -> str:
    """The gist of an exception's text: its first line, without library error names, tracebacks or
    the request dump litellm appends; the server's own `message` when it sent one."""
    text = str(exc).split(_TRACEBACK)[0]
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    line = _ERROR_NAMES.sub("", line).strip()
    found = _SERVER_MESSAGE.search(line)
    if found:
        line = found.group(1)
    return line[:300] or type(exc).__name__


def network_failure(exc: BaseException, custom_server: bool) -> str | None:
    """What the network said, from the OSError under litellm's and httpx's wrappers; None if none."""
    where = "is the server running?" if custom_server else "check the network connection"
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return f"Connection refused; {where}"
        if isinstance(current, socket.gaierror):
            return "the host name does not resolve; " + ("check --api-base" if custom_server else where)
        if isinstance(current, OSError) and not isinstance(current, TimeoutError) and current.strerror:
            return f"{current.strerror}; {where}"
        current = current.__cause__ or current.__context__
    return None


def _innermost(exc: BaseException) -> BaseException:
    """The exception at the bottom of the chain of causes: what actually went wrong."""
    seen = {id(exc)}
    while (inner := exc.__cause__ or exc.__context__) is not None and id(inner) not in seen:
        seen.add(id(inner))
        exc = inner
    return exc


def _masked(url: str | None) -> str | None:
    """A URL without the credentials it may embed (https://user:secret@host)."""
    return re.sub(r"//[^/@]+@", "//****@", url) if url else url


# --------------------------------------------------------------------------------------------
# Scripted fake (tests, demos)
# --------------------------------------------------------------------------------------------

Responder = Callable[[str, Messages], str]


@dataclass
class ScriptedModel:
    """A fake chat model: replies come from a per-role queue or a function of (role, messages).

    Every call is recorded in `calls` so a test can assert what each role was shown.
    """

    script: dict[str, Sequence[str]] | Responder
    name: str = "scripted"
    calls: list[tuple[str, Messages]] = field(default_factory=list)
    _queues: dict[str, list[str]] = field(default_factory=dict, init=False)

    def complete(self, messages: Messages, *, role: str, deadline: float | None = None,
                 stop: threading.Event | None = None, emit: Sink | None = None) -> Reply:
        if stop is not None and stop.is_set():  # Answers at once, so the bounds are only checked first.
            raise stop_signal(stop)
        if deadline is not None and time.monotonic() >= deadline:
            raise RunDeadline()
        self.calls.append((role, messages))
        if callable(self.script):
            text = self.script(role, messages)
        else:
            queue = self._queues.setdefault(role, list(self.script.get(role, [])))
            if not queue:
                raise ModelError(f"scripted model has no reply left for role {role!r}")
            text = queue.pop(0) if len(queue) > 1 else queue[0]  # The last reply repeats.
        if isinstance(text, Exception):
            raise text
        words = sum(len(m["content"].split()) for m in messages)
        return Reply(text=text, input_tokens=words, output_tokens=len(text.split()), cost_usd=None, model=self.name)


# --------------------------------------------------------------------------------------------
# Per-role dispatch and accounting
# --------------------------------------------------------------------------------------------


@dataclass
class RoleUsage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0

    cached_input_tokens: int = 0

    def add(self, reply: Reply) -> None:
        self.merge(RoleUsage(1, reply.input_tokens, reply.output_tokens, reply.cost_usd, reply.cached_input_tokens))

    def merge(self, other: RoleUsage) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cached_input_tokens += other.cached_input_tokens
        # One unpriced call makes the total unknown: a partial sum would understate the cost.
        self.cost_usd = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd

    def as_dict(self) -> dict:
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
        }


class Models:
    """Which model answers each role, and what each role has used so far."""

    def __init__(self, default: ChatModel, per_role: dict[str, ChatModel] | None = None,
                 ready: Callable[[], None] | None = None):
        self.default = default
        self.per_role = per_role or {}
        self.usage: dict[str, RoleUsage] = {}
        self._ready = ready  # Awaited before every call: the model check (model_check.py) may still run.

    def for_role(self, role: str) -> ChatModel:
        return self.per_role.get(role, self.default)

    def ask(self, role: str, messages: Messages, deadline: float | None = None,
            stop: threading.Event | None = None, emit: Sink | None = None) -> Reply:
        """`emit` hears the call's retries (see LiteLLMModel.complete)."""
        if self._ready is not None:
            self._ready()
        reply = self.for_role(role).complete(messages, role=role, deadline=deadline, stop=stop, emit=emit)
        self.usage.setdefault(role, RoleUsage()).add(reply)
        return reply

    def total(self) -> RoleUsage:
        total = RoleUsage()
        for usage in self.usage.values():
            total.merge(usage)
        return total

    def names(self) -> dict[str, str]:
        return {"default": self.default.name, **{role: m.name for role, m in self.per_role.items()}}
