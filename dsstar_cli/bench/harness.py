"""Run a benchmark's tasks through the same pipeline as `dsstar ask`, score every answer, and sum
the rows up per level. The rows file doubles as the journal: `--resume` skips finished tasks.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from dsstar_cli.batch import Question, ask_batch
from dsstar_cli.bench import dabstep, kramabench
from dsstar_cli.bench.tasks import BenchTask
from dsstar_cli.config import Config
from dsstar_cli.errors import UsageError
from dsstar_cli.events import Sink
from dsstar_cli.model import Models
from dsstar_cli.result import ExitCode, RunResult, exit_code_for, overall_exit_code

ROW_FIELDS = ("task_id", "level", "answer", "expected", "correct", "score", "outcome", "rounds", "calls",
              "input_tokens", "output_tokens", "cost_usd", "seconds", "run_dir")


def score_answer(task: BenchTask, answer: str | None) -> tuple[bool | None, float | None]:
    """(correct, score); (None, None) when the task has no expected answer. No answer is wrong."""
    if task.expected is None:
        return None, None
    if answer is None or not answer.strip():
        return False, 0.0
    if task.scorer == "kramabench":
        value = kramabench.score(answer, task.expected, task.answer_type or "string_exact")
        return value >= kramabench.CORRECT_AT, round(value, 4)
    ok = dabstep.match(answer, str(task.expected))
    return ok, float(ok)


def make_row(task: BenchTask, result: RunResult) -> dict:
    correct, score = score_answer(task, result.answer)
    total = result.usage.get("total", {})
    return {
        "task_id": task.task_id, "level": task.level, "answer": result.answer, "expected": task.expected,
        "correct": correct, "score": score, "outcome": result.outcome, "answer_from": result.answer_from,
        "rounds": result.rounds,
        "calls": total.get("calls", 0), "input_tokens": total.get("input_tokens", 0),
        "cached_input_tokens": total.get("cached_input_tokens", 0),
        "output_tokens": total.get("output_tokens", 0), "cost_usd": total.get("cost_usd"),
        "seconds": result.elapsed_s.get("total"), "run_dir": result.run_dir,
        "reason": result.reason, "error_kind": result.error_kind, "plan": result.plan,
        "note": result.note, "assumptions": result.assumptions, "alternatives": result.alternatives,
        # A wrong answer whose right value a script printed under another reading: the reading was the miss.
        "alternative_correct": any(score_answer(task, alt["answer"])[0] for alt in result.alternatives),
        "from_memory": result.from_memory,
    }


def read_rows(path: Path | None) -> list[dict]:
    """Rows of an earlier run; a line cut short by a crash is skipped (that task runs again)."""
    if path is None or not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "task_id" in row:
            rows.append(row)
    return rows


def finished(row: dict) -> bool:
    """A task to skip on --resume: it got an answer, or failed for a reason a rerun would not change.
    Interrupted runs and model failures (unreachable, rate-limited) run again."""
    return row.get("outcome") in ("verified", "unverified", "unanswerable") or (row.get("outcome") == "failed"
                                                                   and not row.get("error_kind"))


@dataclass
class BenchPlan:
    todo: list[BenchTask]
    kept: list[dict]   # rows carried over from the earlier run (--resume)


def plan_run(tasks: list[BenchTask], out: Path | None, resume: bool) -> BenchPlan:
    earlier = read_rows(out)
    if earlier and not resume:
        raise UsageError(f"{out} already holds results: pass --resume to continue that run, "
                         "or choose another --out")
    done = {row["task_id"]: row for row in earlier if finished(row)}
    wanted = {t.task_id for t in tasks}
    return BenchPlan([t for t in tasks if t.task_id not in done],
                     [row for task_id, row in done.items() if task_id in wanted])


def run_tasks(data_dir: Path, tasks: list[BenchTask], config: Config, workers: int,
              on_row: Callable[[dict], None], emit: Sink,
              models_factory: Callable[[], Models] | None = None, memory: bool = False) -> list[dict]:
    """Analyse the folder once, answer every task (`workers` at a time), one scored row per task; each
    afresh, unless `memory` (then as `ask` does: the folder's memory is used and filled)."""
    by_id = {t.task_id: t for t in tasks}
    rows: list[dict] = []

    def on_result(question: Question, result: RunResult) -> None:
        row = make_row(by_id[question.id], result)
        rows.append(row)
        on_row(row)

    questions = [Question(t.task_id, t.question, t.guidelines) for t in tasks]
    ask_batch(data_dir, questions, config, workers, on_result, emit, models_factory, fresh=not memory)
    return rows


def run_to_file(data_dir: Path, tasks: list[BenchTask], config: Config, workers: int, out: Path | None,
                note: Callable[[str], None], memory: bool = False) -> list[dict]:
    """`run_tasks`, each row appended to `out` (when given) as it comes, and one progress line per task."""
    if not tasks:
        return []
    sink = out.open("a", encoding="utf-8") if out is not None else None

    def on_row(row: dict) -> None:
        if sink:
            sink.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            sink.flush()
        mark = {True: "correct", False: "wrong", None: "not scored"}[row["correct"]]
        note(f"[{row['task_id']}] {row['outcome']}: {row['answer']!r} ({mark})")

    try:
        return run_tasks(data_dir, tasks, config, workers, on_row, lambda event: None, memory=memory)
    finally:
        if sink:
            sink.close()


def bench_exit_code(rows: list[dict]) -> ExitCode:
    """0 when every task ran (right or wrong); else the most serious reason some did not."""
    return overall_exit_code([exit_code_for(row.get("outcome", "failed"), row.get("error_kind")) for row in rows],
                             answers_count=False)


def summarize(rows: list[dict]) -> list[dict]:
    """One line per level, then "all": accuracy over scored tasks, means per task, total cost."""
    levels = sorted({r["level"] for r in rows}, key=lambda lv: (lv not in ("easy", "medium", "hard"), lv))
    return [_summary(level, [r for r in rows if r["level"] == level]) for level in levels] + [_summary("all", rows)]


def _summary(level: str, rows: list[dict]) -> dict:
    scored = [r for r in rows if r.get("correct") is not None]
    correct = sum(1 for r in scored if r["correct"])
    costs = [r.get("cost_usd") for r in rows]
    return {
        "level": level, "tasks": len(rows), "scored": len(scored), "correct": correct,
        "accuracy": round(correct / len(scored), 4) if scored else None,
        # The reading behind the answers: right ones that carried alternatives, wrong ones whose
        # right value was among the alternatives.
        "correct_with_alternatives": sum(1 for r in scored if r["correct"] and r.get("alternatives")),
        "wrong_right_in_alternatives": sum(1 for r in scored if not r["correct"] and r.get("alternative_correct")),
        "mean_rounds": _mean(rows, "rounds"), "mean_calls": _mean(rows, "calls"),
        "mean_input_tokens": _mean(rows, "input_tokens"), "mean_output_tokens": _mean(rows, "output_tokens"),
        "mean_cached_input_tokens": _mean(rows, "cached_input_tokens"),
        # One unpriced task makes the total unknown: a partial sum would understate it.
        "cost_usd": None if not rows or None in costs else round(sum(costs), 6),
        "mean_seconds": _mean(rows, "seconds"),
    }


def _mean(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    return round(statistics.fmean(values), 2) if values else None


def write_submission(path: Path, rows: list[dict]) -> None:
    """DABStep's submission file: task_id, agent_answer, reasoning_trace (one JSON object a line)."""
    with path.open("w", encoding="utf-8") as out:
        for row in sorted(rows, key=lambda r: _sort_key(r["task_id"])):
            trace = " | ".join(f"{n}. {step}" for n, step in enumerate(row.get("plan") or [], 1))
            record = {"task_id": row["task_id"], "agent_answer": row.get("answer") or "",
                      "reasoning_trace": trace or row.get("reason") or ""}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def _sort_key(task_id: str) -> tuple:
    return (0, int(task_id), "") if task_id.isdigit() else (1, 0, task_id)
