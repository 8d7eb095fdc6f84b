"""The event stream: the one seam between the DS-STAR loop and everything that shows or keeps it.

The loop only ever calls `emit(Event(...))`; the live display, the plain-line log, the JSONL
stream and the run folder's journal are all consumers. Tests assert on the events themselves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

# Every kind the loop emits, in the order a run produces them.
KINDS = (
    "run_started",      # question, data_dir, run_dir, max_rounds, models, resumed
    "warning",          # source ("sandbox"), message: something the user should know about this run
    "resumed",          # rounds, steps: the checkpoint a resumed run continues from
    "analysis_started", # files
    "file_described",   # path, format, method, chars, error, cached, done, files
    "analysis_done",    # files, cached, seconds
    "retrieval",        # method ("bm25" | "embedding"), described (paths), listed (count), note
    "round_started",    # round
    "route",            # round, action ("add" | "fix"), step, reason
    "plan",             # round, steps, added, dropped
    "code",             # round, purpose ("solution" | "debug" | "final" | "describe"), code
    "execution",        # round, purpose, ok, exit_code, timed_out, seconds, stdout, stderr, error (trimmed
                        # traceback, as the debugger sees it), data_changed
    "debug",            # round, attempt, error
    "verdict",          # round, sufficient, reason
    "call_started",     # role, model
    "call",             # role, model, input_tokens, output_tokens, cost_usd, seconds
    "retry",            # role, model, attempt, attempts, error (what happened: "HTTP 429: rate-limited", "no answer
                        # within 3 s", "unreadable reply: not JSON"), status (HTTP, or None), wait_s (the back-off
                        # before the next attempt; None: that was the last attempt, the call fails). From model.py.
    "context_shrunk",   # role, chars_cut, error: the prompt was over the context window, cut once
    "finalizing",       # verified, budget ("cost" | "time" | None: which budget ran out)
    "answered_from_output",  # round, answer, verified: the finalizer copied the answer from the last
                        # output, which held it; no script ran (otherwise code/execution events follow)
    "following",        # run, question, answer: a follow-up names the run it continues (after run_started)
    "from_memory",      # run, at, rechecked (false), answer: answered from the folder's memory, nothing else ran
    "memory_recheck",   # run, at, changed: a remembered answer's files changed; its script re-runs, the verifier
                        # alone judges (code, execution, verdict events follow)
    "memory_rejected",  # reason: the re-check failed; a full run follows
    "shortcut",         # (no data): the memory covers the question; round 1 is the short round (memory/shortcut.py)
    "shortcut_handed_on",  # reason, verified: the short round gave no verified answer; the loop goes on from it
    "memory_offered",   # functions (names), conventions, answers (counts), rechecked (runs), forgotten (names):
                        # what earlier verified runs on the folder established, offered to this run's prompts
    "answer",           # answer, outcome, verified, rounds, reason, answer_from, note, assumptions, alternatives
)


@dataclass(frozen=True)
class Event:
    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:  # A misspelt kind fails where it is emitted, not silently in a display.
            raise ValueError(f"unknown event kind {self.kind!r}: add it to events.KINDS and display.VIEWS")

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> "Event":
        """An event read back from a run folder's events.jsonl (see `as_dict`)."""
        data = {key: value for key, value in record.items() if key not in ("event", "time")}
        return cls(record["event"], data, record.get("time", 0.0))

    def as_dict(self) -> dict[str, Any]:
        return {"event": self.kind, "time": round(self.time, 3), **self.data}


Sink = Callable[[Event], None]


def fanout(*sinks: Sink) -> Sink:
    """One emit that feeds every sink, in order."""

    def emit(event: Event) -> None:
        for sink in sinks:
            sink(event)

    return emit


class Recorder:
    """A sink that keeps every event: the test suite's view of a run."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e.data for e in self.events if e.kind == kind]
