"""The chat-model seam: one small protocol, the litellm adapter, and a scripted fake for tests.

Everything above this module sees only `ChatModel.complete(messages, role=...) -> Reply` and the
`ModelError` family, so the loop is tested with `ScriptedModel` and no network, while the real
path (litellm over HTTP) is tested end to end against a local OpenAI-compatible server.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

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


class ChatModel(Protocol):
    name: str

    def complete(self, messages: Messages, *, role: str) -> Reply: ...


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
    litellm.num_retries = 0  # Our own retry loop counts attempts (see LiteLLMModel.complete).
    return litellm


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
        sleep: Callable[[float], None] = time.sleep,
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
        self._sleep = sleep

    def _request_args(self, messages: Messages) -> dict:
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

    def complete(self, messages: Messages, *, role: str) -> Reply:
        litellm = import_litellm()
        args = self._request_args(messages)
        for attempt in range(1, self.attempts + 1):
            try:
                response = litellm.completion(**args)
                return self._reply(litellm, response)
            except Exception as exc:  # Classified below; nothing escapes unclassified.
                error = classify_error(litellm, exc, self.name, self.api_base, self.attempts)
                if not isinstance(error, _Transient) or attempt == self.attempts:
                    raise (error.final if isinstance(error, _Transient) else error) from exc
                self._sleep(backoff_delay(attempt, error.retry_after, self.max_delay_s))
        raise AssertionError("unreachable")

    def _reply(self, litellm, response) -> Reply:
        choices = getattr(response, "choices", None) or []
        text = (choices[0].message.content or "") if choices else ""
        usage = getattr(response, "usage", None)
        return Reply(
            text=text,
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=_price(litellm, self.name, response),
            model=self.name,
        )


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
    """A failure worth retrying; `final` is what to raise when the retries run out."""

    final: ModelError
    retry_after: float | None = None


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
                   attempts: int = RETRY_ATTEMPTS) -> ModelError | _Transient:
    """Turn a provider exception into a message a user can act on."""
    where = f" at {api_base}" if api_base else ""
    detail = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    if isinstance(exc, litellm.ContextWindowExceededError) or "context length" in detail.lower() \
            or "context_length_exceeded" in detail:
        return ContextTooLong(f"the prompt is longer than {model}'s context window ({detail})")
    if isinstance(exc, litellm.AuthenticationError) or getattr(exc, "status_code", None) in (401, 403):
        return ModelConfigError(f"the provider rejected the credentials for {model}{where}: check its API key ({detail})")
    if isinstance(exc, litellm.NotFoundError):
        return ModelConfigError(f"model {model!r} was not found{where}: check the model name ({detail})")
    if isinstance(exc, litellm.RateLimitError):
        return _Transient(ModelUnreachable(f"{model} kept rate-limiting after {attempts} attempts"), _retry_after(exc))
    if isinstance(exc, litellm.Timeout):
        return _Transient(ModelUnreachable(f"{model}{where} did not answer in time after {attempts} attempt(s) "
                                           "(raise --llm-timeout if it is just slow)"))
    # litellm reports a refused connection as a server error whose text says "Connection error".
    if isinstance(exc, litellm.APIConnectionError) or "connection error" in detail.lower():
        return _Transient(ModelUnreachable(f"cannot reach {model}{where}: {detail}"))
    if isinstance(exc, (litellm.InternalServerError, litellm.ServiceUnavailableError, litellm.BadGatewayError)):
        return _Transient(ModelUnreachable(f"{model}{where} kept failing (server error): {detail}"))
    if isinstance(exc, litellm.BadRequestError):
        return ModelConfigError(f"{model}{where} refused the request: {detail}")
    if isinstance(exc, litellm.APIError):
        return _Transient(ModelUnreachable(f"{model}{where} answered with an error: {detail}"))
    return ModelError(f"calling {model}{where} failed: {type(exc).__name__}: {detail}")


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

    def complete(self, messages: Messages, *, role: str) -> Reply:
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

    def add(self, reply: Reply) -> None:
        self.merge(RoleUsage(1, reply.input_tokens, reply.output_tokens, reply.cost_usd))

    def merge(self, other: RoleUsage) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        # One unpriced call makes the total unknown: a partial sum would understate the cost.
        self.cost_usd = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd

    def as_dict(self) -> dict:
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
        }


class Models:
    """Which model answers each role, and what each role has used so far."""

    def __init__(self, default: ChatModel, per_role: dict[str, ChatModel] | None = None):
        self.default = default
        self.per_role = per_role or {}
        self.usage: dict[str, RoleUsage] = {}

    def for_role(self, role: str) -> ChatModel:
        return self.per_role.get(role, self.default)

    def ask(self, role: str, messages: Messages) -> Reply:
        reply = self.for_role(role).complete(messages, role=role)
        self.usage.setdefault(role, RoleUsage()).add(reply)
        return reply

    def total(self) -> RoleUsage:
        total = RoleUsage()
        for usage in self.usage.values():
            total.merge(usage)
        return total

    def names(self) -> dict[str, str]:
        return {"default": self.default.name, **{role: m.name for role, m in self.per_role.items()}}
