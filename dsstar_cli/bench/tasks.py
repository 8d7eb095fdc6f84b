"""Benchmark task files: DABStep's JSONL and KramaBench's workload.json, read into one shape."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsstar_cli.errors import UsageError

LEVELS = ("easy", "medium", "hard")

# KramaBench tasks carry no format guidelines; its answer types say what form is scored.
_KRAMABENCH_GUIDELINES = {
    "numeric_exact": "Answer with just the number, no units or words.",
    "numeric_approximate": "Answer with just the number, no units or words.",
    "string_exact": "Answer with just the value, exactly as it appears in the data (or in the form the question "
                    "names, such as Yes/No or True/False), no explanation.",
    "string_approximate": "Answer with just the value, as it appears in the data (or in the form the question "
                          "names), no explanation.",
    "list_exact": "Answer with a Python-style list of the values, e.g. ['a', 'b'].",
    "list_approximate": "Answer with a Python-style list of the values, e.g. ['a', 'b'].",
}


@dataclass
class BenchTask:
    task_id: str
    question: str
    guidelines: str | None
    level: str
    expected: Any = None          # None when the task file has no answer: the row is not scored
    answer_type: str | None = None  # KramaBench's answer type; None means DABStep's rules
    scorer: str = "dabstep"


def read_tasks(path: Path) -> list[BenchTask]:
    """Tasks from a DABStep JSONL file or a KramaBench workload.json."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the task file {path}: {exc}") from exc
    tasks = _kramabench(path, text) if text.lstrip().startswith("[") else _dabstep(path, text)
    if not tasks:
        raise UsageError(f"the task file {path} has no tasks")
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise UsageError(f"the task file {path} repeats a task id: ids must be unique")
    return tasks


def default_data_dir(tasks_path: Path) -> Path | None:
    """KramaBench keeps its files in input/ beside workload.json."""
    candidate = tasks_path.parent / "input"
    return candidate if candidate.is_dir() else None


def select(tasks: list[BenchTask], level: str | None, limit: int | None) -> list[BenchTask]:
    if level is not None:
        if level not in LEVELS:
            raise UsageError(f"--level must be one of {', '.join(LEVELS)}, not {level!r}")
        tasks = [t for t in tasks if t.level == level]
    if limit is not None:
        if limit < 1:
            raise UsageError("--limit must be at least 1")
        tasks = tasks[:limit]
    return tasks


def _dabstep(path: Path, text: str) -> list[BenchTask]:
    tasks = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{number} is not valid JSON ({exc.msg})") from exc
        if not isinstance(record, dict) or "task_id" not in record or not str(record.get("question", "")).strip():
            raise UsageError(f'{path}:{number} needs "task_id" and a non-empty "question" (DABStep format)')
        tasks.append(BenchTask(str(record["task_id"]), record["question"], record.get("guidelines"),
                               str(record.get("level", "unknown")).lower(), record.get("answer")))
    return tasks


def _kramabench(path: Path, text: str) -> list[BenchTask]:
    try:
        records = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    tasks = []
    for record in records:
        if not isinstance(record, dict) or "id" not in record or "query" not in record:
            raise UsageError(f'{path}: every task needs "id" and "query" (KramaBench format)')
        answer_type = str(record.get("answer_type", "string_exact"))
        level = next((lv for lv in LEVELS if f"-{lv}-" in str(record["id"])), "unknown")
        tasks.append(BenchTask(str(record["id"]), record["query"], _KRAMABENCH_GUIDELINES.get(answer_type), level,
                               record.get("answer"), answer_type, scorer="kramabench"))
    return tasks
