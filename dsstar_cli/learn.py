"""`dsstar learn DIR --questions FILE`: fill a folder's memory ahead of use, and say what was kept.

It is a batch (batch.py: the same questions file, the folder analysed once, `workers` questions at a
time) with the memory always on: each verified answer worth keeping is remembered by its run, as for
any `ask`. Then each question gets a row: its outcome, and whether its answer is now in the memory;
when not, why (recall.not_kept_because holds the rules; this module only reports them). Last, what
the memory holds for the folder now (inventory.show), counted by kind.

Whether an answer was kept is read back from the memory, not inferred: a run can meet every rule and
still not be written (a file it read changed during the run, or the memory could not be written).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from dsstar_cli.batch import Question, ask_batch, batch_exit_code, read_questions
from dsstar_cli.config import Config
from dsstar_cli.errors import Terminated, UsageError
from dsstar_cli.memory import MemoryUnavailable, inventory
from dsstar_cli.memory.recall import normalise, not_kept_because
from dsstar_cli.result import ExitCode, RunResult
from dsstar_cli.runner import check_data_folder

KEPT, ALREADY, NOT_KEPT = "kept", "already", "not_kept"
# What the memory holds, as inventory.show lists it: answers, and (newer dsstar) functions and conventions.
MEMORY_KINDS = {"entries": "answer(s)", "functions": "function(s)", "conventions": "convention(s)"}
ANSWER_CHARS = 100  # An answer longer than this is cut in the text report (--json has it whole).


@dataclass
class Learned:
    """One question's row of the report."""

    id: str
    question: str
    guidelines: str | None
    outcome: str
    answer: str | None
    run: str | None
    exit_code: int
    memory: str            # kept | already (answered from the memory) | not_kept
    why: str | None        # why not kept, in a few words


@dataclass
class Lesson:
    data_dir: str
    asked: int                 # questions in the file
    rows: list[Learned]        # in the file's order; fewer than `asked` after an interruption
    memory: dict               # {"path", "entries": N, ...} or {"unavailable": why}
    exit_code: ExitCode
    interrupted: bool = False

    def totals(self) -> dict:
        count = lambda state: sum(row.memory == state for row in self.rows)  # noqa: E731
        return {"questions": self.asked, "answered": len(self.rows),
                "verified": sum(row.outcome == "verified" for row in self.rows),
                "kept": count(KEPT), "already": count(ALREADY), "not_kept": count(NOT_KEPT)}

    def as_dict(self) -> dict:
        return {"data_dir": self.data_dir, "questions": [asdict(row) for row in self.rows], "totals": self.totals(),
                "memory": self.memory, "interrupted": self.interrupted, "exit_code": int(self.exit_code)}


def learn(data_dir: Path, questions_file: Path, config: Config, workers: int,
          note: Callable[[str], None]) -> Lesson:
    """Answer every question of `questions_file` on `data_dir` with the memory on; report what it kept.
    Ctrl-C or SIGTERM ends the batch (as for `ask --questions`) and the report covers what was answered."""
    questions = read_questions(questions_file)
    folder = check_data_folder(data_dir)  # Before the first progress line: bad input is one line.
    if config["engine"] != "duckdb":
        raise UsageError("learn is not supported on engine: spark: the memory knows local folders only")
    note(f"{len(questions)} question(s) to learn with {workers} worker(s)")
    results: dict[str, RunResult] = {}

    def on_result(question: Question, result: RunResult) -> None:
        results[question.id] = result
        note(f"[{question.id}] {result.outcome}: {result.answer!r}")

    stopped: BaseException | None = None
    try:
        ask_batch(folder, questions, config, workers, on_result, lambda event: None)
    except (KeyboardInterrupt, Terminated) as exc:
        stopped = exc
    memory, remembered = _memory_now(folder)
    rows = [_row(q, results[q.id], remembered, memory) for q in questions if q.id in results]
    if stopped is None:
        code = batch_exit_code(list(results.values()))
    else:
        code = ExitCode.TERMINATED if isinstance(stopped, Terminated) else ExitCode.INTERRUPTED
    return Lesson(str(folder), len(questions), rows, memory, code, interrupted=stopped is not None)


def _memory_now(folder: Path) -> tuple[dict, dict[tuple[str, str], str]]:
    """The memory's summary for the report, and the run that each remembered question's answer is from."""
    try:
        shown = inventory.show(folder)
    except MemoryUnavailable as exc:
        return {"unavailable": str(exc)}, {}
    summary = {"path": shown.get("memory"), **{kind: len(shown[kind]) for kind in MEMORY_KINDS if kind in shown}}
    runs = {(normalise(e["question"]), normalise(e["guidelines"])): e["run"] for e in shown.get("entries", [])}
    return summary, runs


def _row(question: Question, result: RunResult, remembered: dict[tuple[str, str], str], memory: dict) -> Learned:
    run = Path(result.run_dir).name if result.run_dir else None
    kept_by = remembered.get((normalise(result.question), normalise(result.guidelines)))
    from_memory = result.from_memory if result.from_memory and not result.from_memory.get("rechecked") else None
    if from_memory and kept_by == from_memory.get("run"):
        state, why = ALREADY, None
    elif kept_by is not None and kept_by == run:
        state, why = KEPT, None
    else:
        state, why = NOT_KEPT, not_kept_because(result) or _unwritten(kept_by, memory)
    return Learned(question.id, question.question, question.guidelines, result.outcome, result.answer, run,
                   int(result.exit_code()), state, why)


def _unwritten(kept_by: str | None, memory: dict) -> str:
    """Why an answer the rules would keep is not in the memory."""
    if "unavailable" in memory:
        return "the memory is unavailable"
    if kept_by is not None:
        return f"the same question's answer from run {kept_by} was kept instead"
    return "not written: a file it read changed during the run, or the memory could not be written"


def text(lesson: Lesson) -> str:
    """The report for a person: a block per question, the totals, what the memory holds now."""
    lines = []
    for row in lesson.rows:
        answer = " ".join((row.answer or "").split())
        answer = answer if len(answer) <= ANSWER_CHARS else answer[:ANSWER_CHARS - 1] + "…"
        form = f" [{row.guidelines}]" if row.guidelines else ""
        kept = {KEPT: "kept in the memory", ALREADY: "already in the memory (answered from it)",
                NOT_KEPT: f"not kept: {row.why}"}[row.memory]
        lines += [f"[{row.id}] {row.question}{form}", f"    {row.outcome}" + (f": {answer}" if answer else ""),
                  f"    {kept}", ""]
    totals = lesson.totals()
    unasked = totals["questions"] - totals["answered"]
    lines.append(f"{totals['questions']} question(s): {totals['verified']} verified; {totals['kept']} kept, "
                 f"{totals['already']} already in the memory, {totals['not_kept']} not kept"
                 + (f"; {unasked} not answered (interrupted)" if unasked else ""))
    lines.append(memory_line(lesson.data_dir, lesson.memory))
    return "\n".join(lines) + "\n"


def memory_line(data_dir: str, memory: dict) -> str:
    if "unavailable" in memory:
        return f"the memory is unavailable: {memory['unavailable']}"
    held = ", ".join(f"{memory[kind]} {label}" for kind, label in MEMORY_KINDS.items() if kind in memory)
    return f"the memory for {data_dir} now holds {held} ({memory['path']})"
