"""What every role shares: ask a model (re-asking once when the reply is malformed), and run a
script, letting the debugger repair it a bounded number of times."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from typing import Callable, TypeVar

from dsstar_cli.errors import stop_signal
from dsstar_cli.events import Event, Sink
from dsstar_cli.model import ContextTooLong, Messages, Models, Reply, RunDeadline
from dsstar_cli.roles import clip, debugger, evidence_cut, format_reminder, keep_evidence
from dsstar_cli.roles.context import RunContext
from dsstar_cli.runlog import RunFolder
from dsstar_cli.sandbox import Execution, Executor
from dsstar_cli.secrets import redact, redact_tree, secret_values

T = TypeVar("T")
EVENT_OUTPUT_CHARS = 20_000


@dataclass
class Attempt:
    """A script and what running it gave; `execution` is None when no script could be written."""

    code: str
    execution: Execution | None

    @property
    def ok(self) -> bool:
        return self.execution is not None and self.execution.ok

    def to_dict(self) -> dict:
        return {"code": self.code, "execution": asdict(self.execution) if self.execution else None}

    @classmethod
    def from_dict(cls, data: dict) -> "Attempt":
        execution = data.get("execution")
        return cls(data["code"], Execution(**execution) if execution else None)

    def output(self, max_chars: int) -> str:
        """What the next role is shown: stdout, or the failure when the script did not work."""
        if self.execution is None:
            return "(no script: the model's reply held no Python code)"
        if self.execution.ok:
            return keep_evidence(self.execution.stdout.strip() or "(the script printed nothing)", max_chars)
        printed = self.execution.stdout.strip()
        failure = clip(self.execution.failure(), max_chars // 2)
        return (keep_evidence(printed, max_chars // 2) + "\n" if printed else "") + f"The script FAILED:\n{failure}"

    def cut_chars(self, max_chars: int) -> int:
        """How much of what the script printed reviewers were not shown."""
        if self.execution is None:
            return 0
        return evidence_cut(self.execution.stdout.strip(), max_chars if self.execution.ok else max_chars // 2)

    @property
    def printed_chars(self) -> int:
        """How many characters the script printed (what the output limit is measured against)."""
        return len(self.execution.stdout.strip()) if self.execution else 0


def shrink(messages: Messages) -> tuple[Messages, int]:
    """Halve the longest message (most often the file descriptions), keeping its head and tail."""
    longest = max(range(len(messages)), key=lambda i: len(messages[i]["content"]))
    text = messages[longest]["content"]
    keep = len(text) // 2
    cut = len(text) - keep
    marker = f"\n[... {cut:,} characters cut to fit the model's context window ...]\n"
    shorter = text[: keep * 3 // 4] + marker + text[len(text) - keep // 4:]
    return messages[:longest] + [{**messages[longest], "content": shorter}] + messages[longest + 1:], cut


FINALIZE_GRACE_S = 60.0  # A run out of time still gets its answer written, within this long (calls included).


class BudgetExhausted(Exception):
    """The run's cost or time budget is spent: stop the loop and give a best-effort answer."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind, self.reason = kind, reason
        self.outcome = {"cost": "cost_limit", "time": "time_limit"}[kind]


@dataclass
class Budget:
    """What the run may still spend. The deadline bounds every model call in flight and every script,
    not only the start of each: a call still running at the deadline is abandoned."""

    max_cost_usd: float | None = None
    deadline: float | None = None  # time.monotonic() value
    timeout_s: float | None = None
    stop: threading.Event | None = None  # Set from another thread (batch Ctrl-C): end as interrupted.
    grace: bool = False  # The deadline is the finalizer's grace period, not --timeout.

    def check(self, models: Models) -> None:
        if self.stop is not None and self.stop.is_set():
            raise stop_signal(self.stop)  # Only the main thread gets the signal; this passes it on.
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise self.out_of_time()
        cost = models.total().cost_usd
        if self.max_cost_usd is not None and cost is not None and cost >= self.max_cost_usd:
            raise BudgetExhausted("cost", f"the cost budget (${self.max_cost_usd:g}, --max-cost) ran out "
                                          f"at ${cost:.4f}")

    def out_of_time(self) -> BudgetExhausted:
        if self.grace:
            return BudgetExhausted("time", f"the final answer's grace period ({FINALIZE_GRACE_S:g} s) ran out")
        return BudgetExhausted("time", f"the time budget ({self.timeout_s:g} s, --timeout) ran out")


class Agent:
    def __init__(self, models: Models, executor: Executor, emit: Sink, run_folder: RunFolder | None,
                 debug_attempts: int):
        self.models = models
        self.executor = executor
        self.emit = emit
        self.run_folder = run_folder
        self.debug_attempts = debug_attempts
        self.round = 0
        # Continue the numbering in a resumed run's folder, so no earlier script is overwritten.
        self._scripts = len(list((run_folder.path / "scripts").glob("*.py"))) if run_folder else 0
        self.budget = Budget()
        self._secrets = secret_values()

    def script_timeout(self) -> float | None:
        """Seconds the next script may run when a deadline is near; None: the executor's own limit."""
        deadline = self.budget.deadline
        return None if deadline is None else max(0.1, deadline - time.monotonic())

    def finalizing(self) -> None:
        """No more cost or --timeout checks: only the finalizer is left, with a short grace period for
        its calls and script (when the run had a deadline). A stop request still ends it."""
        deadline = time.monotonic() + FINALIZE_GRACE_S if self.budget.deadline else None
        self.budget = Budget(deadline=deadline, stop=self.budget.stop, grace=True)

    def chat(self, role: str, messages: Messages) -> str:
        self.budget.check(self.models)
        self.emit(Event("call_started", {"round": self.round, "role": role,
                                         "model": self.models.for_role(role).name}))
        started = time.monotonic()
        # A credential's value never reaches the model, whatever carried it (a file, a script's output),
        # nor leaves a reply (a model could echo one it was shown elsewhere).
        messages = redact_tree(messages, self._secrets)
        try:
            reply = self._ask_model(role, messages)
        except ContextTooLong as exc:  # Once: cut the longest part of the prompt and ask again.
            messages, cut = shrink(messages)
            self.emit(Event("context_shrunk", {"round": self.round, "role": role, "chars_cut": cut,
                                               "error": str(exc)[:300]}))
            reply = self._ask_model(role, messages)
        seconds = time.monotonic() - started
        reply.text = redact(reply.text, self._secrets)
        if self.run_folder:
            self.run_folder.save_call(role, messages, reply, seconds)
        self.emit(Event("call", {"role": role, "model": reply.model, "input_tokens": reply.input_tokens,
                                 "output_tokens": reply.output_tokens,
                                 "cached_input_tokens": reply.cached_input_tokens, "cost_usd": reply.cost_usd,
                                 "seconds": round(seconds, 3)}))
        return reply.text

    def _ask_model(self, role: str, messages: Messages) -> Reply:
        """One call, abandoned when the budget's deadline passes or a stop is requested."""
        try:
            return self.models.ask(role, messages, deadline=self.budget.deadline, stop=self.budget.stop,
                                   emit=self.emit)
        except RunDeadline:
            raise self.budget.out_of_time() from None

    def ask(self, role: str, messages: Messages, parse: Callable[[str], T | None], **reminder: str) -> T | None:
        """Ask, parse, and on a malformed reply re-ask once with a format reminder. None if still bad."""
        text = self.chat(role, messages)
        value = parse(text)
        if value is None:
            retry = messages + [{"role": "assistant", "content": text},
                                {"role": "user", "content": format_reminder(role, **reminder)}]
            value = parse(self.chat(role, retry))
        return value

    def execute(self, code: str, purpose: str) -> Execution:
        self._scripts += 1
        name = f"{self._scripts:03d}-round{self.round:02d}-{purpose}"
        self.emit(Event("code", {"round": self.round, "purpose": purpose, "code": code, "script": f"{name}.py"}))
        execution = self.executor.run(code, name, timeout_s=self.script_timeout(), stop=self.budget.stop)
        if self.run_folder:
            self.run_folder.write(f"scripts/{name}.stdout.txt", execution.stdout)
            self.run_folder.write(f"scripts/{name}.stderr.txt", execution.stderr)
        self.emit(Event("execution", {
            "round": self.round, "purpose": purpose, "ok": execution.ok, "exit_code": execution.exit_code,
            "timed_out": execution.timed_out, "seconds": round(execution.seconds, 3),
            "stdout": clip(execution.stdout, EVENT_OUTPUT_CHARS), "stderr": clip(execution.stderr, EVENT_OUTPUT_CHARS),
            # What the debugger is shown: the failure with the script's own frames only.
            "error": "" if execution.ok else debugger.summarize_error(execution.failure()),
            "data_changed": execution.data_changed}))
        return execution

    def write_and_run(self, role: str, messages: Messages, purpose: str, context: RunContext) -> Attempt:
        """One script from `role`, run, then repaired by the debugger until it works or attempts run out."""
        code = self.ask(role, messages, debugger.parse)
        if code is None:
            return Attempt("", None)
        return self.run_and_repair(code, purpose, context)

    def run_and_repair(self, code: str, purpose: str, context: RunContext) -> Attempt:
        """Run a script, then let the debugger repair it until it works or attempts run out."""
        execution = self.execute(code, purpose)
        for attempt in range(1, self.debug_attempts + 1):
            if execution.ok:
                break
            self.emit(Event("debug", {"round": self.round, "attempt": attempt,
                                      "error": debugger.summarize_error(execution.failure())}))
            fixed = self.ask(debugger.ROLE, debugger.messages(context, code, execution.failure(), execution.stdout),
                             debugger.parse)
            if fixed is None:
                break
            code = fixed
            execution = self.execute(code, f"{purpose}-debug{attempt}")
        return Attempt(code, execution)
