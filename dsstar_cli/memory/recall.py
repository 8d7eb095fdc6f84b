"""One run's use of its folder's memory: look the question up, say whether the remembered answer can
be given at once (the files it read are unchanged) or must be re-checked (one changed), and keep a
verified answer afterwards.

What is remembered: only an answer with outcome `verified` and no other plausible reading that
changes it. Not an ambiguous one: the run chose one reading among several, and a fresh look (or a
rephrased question) may settle it otherwise; replaying it would freeze a coin toss. Not an
unanswerable one: that verdict rests on what the folder lacks, which the fingerprints of the files
a script read cannot capture (a file added since may hold it). Not a best-effort answer (round cap,
--max-cost, --timeout): nothing verified it. Not a follow-up: its question means something only
beside the run it follows ("and for April?").

The same question is the same text once whitespace and case are normalised, with the same answer
format (--guidelines, normalised the same way), on the same folder (fingerprint.folder_identity).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from dsstar_cli.agent import Agent
from dsstar_cli.loop import LoopResult
from dsstar_cli.events import Event
from dsstar_cli.memory import fingerprint, knowledge, replay, shortcut
from dsstar_cli.memory.store import Entry, Learned, MemoryUnavailable, Store
from dsstar_cli.result import RunResult
from dsstar_cli.roles.context import RunContext
from dsstar_cli.secrets import redact, secret_values

VERIFIED = "verified"
# What an answer from memory repeats of the verified run's result.
KEPT_FIELDS = ("plan", "note", "assumptions", "final_output", "files", "files_used", "max_rounds")


def normalise(text: str | None) -> str:
    """A question or answer format as the memory compares it: whitespace collapsed, case folded."""
    return " ".join((text or "").split()).casefold()


@dataclass
class Recall:
    data_dir: Path
    question: str
    guidelines: str | None
    store: Store | None = None
    entry: Entry | None = None
    changed: list[str] = field(default_factory=list)
    started_ns: int = field(default_factory=time.time_ns)
    provenance: dict | None = None  # The result's `from_memory` once the memory answered.

    answers: bool = True  # Off for a follow-up: "and for April?" is no question of its own to look up.
    covered: bool = False  # The memory offers functions that fit the question (knowledge.relevant).

    @classmethod
    def open(cls, data_dir: Path, question: str, guidelines: str | None, use: bool = True,
             answers: bool = True) -> "Recall":
        """The memory for this question; an empty one when `use` is off (--fresh) or the memory cannot
        be used here (then the run goes on as if nothing was remembered). Without `answers` (a
        follow-up) no answer is looked up, but what earlier runs established is offered and kept."""
        recall = cls(data_dir, question, guidelines, answers=answers)
        if not use:
            return recall
        try:
            recall.store = Store.for_folder(data_dir)
            recall.entry = recall.store.find(fingerprint.folder_identity(data_dir), normalise(question),
                                             normalise(guidelines)) if answers else None
        except (MemoryUnavailable, sqlite3.Error, OSError, ValueError):
            recall.close()
            recall.store, recall.entry = None, None
            return recall
        if recall.entry is not None:
            recall.changed = fingerprint.changed(data_dir, recall.entry.files)
        return recall

    def at_once(self) -> Entry | None:
        """The remembered answer when every file it read is unchanged: given with no model call."""
        return self.entry if self.entry is not None and not self.changed else None

    def to_recheck(self) -> Entry | None:
        """The remembered answer when a file it read changed: its script re-runs, the verifier judges."""
        return self.entry if self.entry is not None and self.changed else None

    def recheck(self, agent: Agent, context: RunContext, output_chars: int) -> LoopResult | None:
        """The remembered answer re-checked on the changed files (replay.py), or None: a full run follows."""
        entry = self.to_recheck()
        if entry is None:
            return None
        outcome = replay.recheck(entry, self.changed, agent, context, output_chars)
        if outcome is not None:
            self.provenance = {"run": entry.run_id, "at": entry.at, "rechecked": True, "changed": self.changed}
        return outcome

    def knowledge(self, agent: Agent) -> str:
        """What the folder's verified runs established, for this run's prompts (knowledge.py): its block,
        with the module of functions written into the run's work folder. "" when nothing is offered."""
        if self.store is None:
            return ""
        folder = fingerprint.folder_identity(self.data_dir)

        def recheck(script: str) -> bool:
            return agent.execute(script, "memory-check").ok

        try:
            offered = knowledge.offer(self.store, folder, self.data_dir, self.store.entries(folder), recheck)
            offered.install(agent.executor.workdir)
        except (sqlite3.Error, OSError, ValueError):
            return ""  # A memory that cannot be read is a memory not offered.
        if offered or offered.forgotten:
            agent.emit(Event("memory_offered", offered.summary()))
        groups = knowledge.relevant(offered, self.question)
        self.covered = any(group["functions"] for _, group in groups)
        return knowledge.block(groups)

    def shortcut(self, agent: Agent, context: RunContext, output_chars: int, max_rounds: int) -> LoopResult | dict | None:
        """A covered question's short round (shortcut.py): the result, the loop's state after it, or None."""
        if not self.covered:
            return None
        return shortcut.first_round(agent, context, output_chars, max_rounds)

    def remember(self, result: RunResult, solution_code: str) -> None:
        """Keep `result` when it is worth remembering (see the module docstring), and what its verified
        script established (knowledge.py). Never fails the run: a memory that cannot be written is a
        memory not kept."""
        if self.store is None or result.outcome != VERIFIED or (result.from_memory and
                                                                not result.from_memory.get("rechecked")):
            return
        prints = [fingerprint.take(self.data_dir, path) for path in result.files_used]
        if any(p is None or p.mtime_ns >= self.started_ns for p in prints):
            return  # A file went, or changed while the run read it: what would the fingerprint vouch for?
        secrets = secret_values()
        at = datetime.now().isoformat(timespec="seconds")
        source = Learned("", "", {}, Path(result.run_dir or "").name, at, result.question, "", prints)
        try:
            knowledge.learn(self.store, fingerprint.folder_identity(self.data_dir), redact(solution_code, secrets),
                            [redact(a, secrets) for a in result.assumptions],
                            not result.ambiguous and not result.follows, source)
        except (sqlite3.Error, OSError):
            pass
        if not _worth_keeping(result, solution_code):
            return
        entry = Entry(0, fingerprint.folder_identity(self.data_dir), result.question, result.guidelines,
                      Path(result.run_dir or "").name, at, result.answer,
                      result.answer_from, redact(solution_code, secrets), result.final_code,
                      {key: getattr(result, key) for key in KEPT_FIELDS}, prints)
        try:
            self.store.put(entry, normalise(result.question), normalise(result.guidelines))
        except (sqlite3.Error, OSError):  # The answer stands without being kept.
            pass

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def not_kept_because(result: RunResult, solution_code: str | None = None) -> str | None:
    """Why `result` is not worth remembering, in a few words (the rules of the module docstring); None
    when it is. `dsstar learn` reports it per question. A caller that has the result only (not the
    verified script) passes no `solution_code`: the checks on the scripts are then skipped."""
    if result.follows:
        return "a follow-up"
    if result.outcome != VERIFIED or result.answer is None:
        return "unanswerable" if result.outcome == "unanswerable" else f"not verified ({result.outcome})"
    if result.ambiguous:
        return "ambiguous: another reading gives another answer"
    if any(item.get("kind") == "figure" for item in result.artifacts):
        return "drew a figure"  # Its figures are in its own run folder: asked again, they are drawn again.
    if result.from_memory and not result.from_memory.get("rechecked"):
        return "answered from memory"  # Given from memory unchanged: the entry already says all of it.
    if solution_code is not None and not solution_code.strip():
        return "no verified script"
    if solution_code is not None and result.answer_from == "final_script" and not result.final_code.strip():
        return "no final script"
    return None


def _worth_keeping(result: RunResult, solution_code: str) -> bool:
    return not_kept_because(result, solution_code) is None
