"""What every role shares: ask a model (re-asking once when the reply is malformed), and run a
script, letting the debugger repair it a bounded number of times."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from dsstar_cli.events import Event, Sink
from dsstar_cli.model import Messages, Models
from dsstar_cli.roles import clip, debugger, format_reminder
from dsstar_cli.runlog import RunFolder
from dsstar_cli.sandbox import Execution, Executor

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

    def output(self, max_chars: int) -> str:
        """What the next role is shown: stdout, or the failure when the script did not work."""
        if self.execution is None:
            return "(no script: the model's reply held no Python code)"
        if self.execution.ok:
            return clip(self.execution.stdout.strip() or "(the script printed nothing)", max_chars)
        printed = self.execution.stdout.strip()
        failure = clip(self.execution.failure(), max_chars // 2)
        return (clip(printed, max_chars // 2) + "\n" if printed else "") + f"The script FAILED:\n{failure}"


class Agent:
    def __init__(self, models: Models, executor: Executor, emit: Sink, run_folder: RunFolder | None,
                 debug_attempts: int):
        self.models = models
        self.executor = executor
        self.emit = emit
        self.run_folder = run_folder
        self.debug_attempts = debug_attempts
        self.round = 0
        self._scripts = 0

    def chat(self, role: str, messages: Messages) -> str:
        self.emit(Event("call_started", {"round": self.round, "role": role,
                                         "model": self.models.for_role(role).name}))
        started = time.monotonic()
        reply = self.models.ask(role, messages)
        seconds = time.monotonic() - started
        if self.run_folder:
            self.run_folder.save_call(role, messages, reply, seconds)
        self.emit(Event("call", {"role": role, "model": reply.model, "input_tokens": reply.input_tokens,
                                 "output_tokens": reply.output_tokens, "cost_usd": reply.cost_usd,
                                 "seconds": round(seconds, 3)}))
        return reply.text

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
        execution = self.executor.run(code, name)
        if self.run_folder:
            self.run_folder.write(f"work/{name}.stdout.txt", execution.stdout)
            self.run_folder.write(f"work/{name}.stderr.txt", execution.stderr)
        self.emit(Event("execution", {
            "round": self.round, "purpose": purpose, "ok": execution.ok, "exit_code": execution.exit_code,
            "timed_out": execution.timed_out, "seconds": round(execution.seconds, 3),
            "stdout": clip(execution.stdout, EVENT_OUTPUT_CHARS), "stderr": clip(execution.stderr, EVENT_OUTPUT_CHARS),
            "data_changed": execution.data_changed}))
        return execution

    def write_and_run(self, role: str, messages: Messages, purpose: str, files: str, data_dir: str) -> Attempt:
        """One script from `role`, run, then repaired by the debugger until it works or attempts run out."""
        code = self.ask(role, messages, debugger.parse)
        if code is None:
            return Attempt("", None)
        execution = self.execute(code, purpose)
        for attempt in range(1, self.debug_attempts + 1):
            if execution.ok:
                break
            self.emit(Event("debug", {"round": self.round, "attempt": attempt,
                                      "error": debugger.summarize_error(execution.failure())}))
            fixed = self.ask(debugger.ROLE, debugger.messages(code, execution.failure(), files, data_dir),
                             debugger.parse)
            if fixed is None:
                break
            code = fixed
            execution = self.execute(code, f"{purpose}-debug{attempt}")
        return Attempt(code, execution)
