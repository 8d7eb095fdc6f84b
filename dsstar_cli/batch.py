"""Many questions over one folder: analyse once, answer in parallel, one JSON line per answer.

A rerun with the same output file skips the questions it already answered, so a long batch that
was cut short resumes where it stopped.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from dsstar_cli.config import Config
from dsstar_cli.errors import Terminated, UsageError
from dsstar_cli.events import Sink, fanout
from dsstar_cli.model import Models
from dsstar_cli.result import ExitCode, RunResult
from dsstar_cli.runner import AskRequest, analyse, ask, build_models, check_data_folder, check_models, \
    make_agent, open_run_folder


@dataclass
class Question:
    id: str
    question: str
    guidelines: str | None = None


def read_questions(path: Path) -> list[Question]:
    """JSONL with `id`, `question` and optional `guidelines`; or plain text, one question a line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the questions file {path}: {exc}") from exc
    lines = [(n, line.strip()) for n, line in enumerate(lines, 1) if line.strip() and not line.startswith("#")]
    if not lines:
        raise UsageError(f"the questions file {path} has no questions")
    if not lines[0][1].startswith("{"):
        return [Question(str(i), text) for i, (_, text) in enumerate(lines, 1)]
    questions = [_parse_jsonl_line(path, n, text) for n, text in lines]
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise UsageError(f"the questions file {path} repeats an id: ids must be unique")
    return questions


def _parse_jsonl_line(path: Path, number: int, text: str) -> Question:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{number} is not valid JSON ({exc.msg})") from exc
    if not isinstance(record, dict) or not str(record.get("question", "")).strip():
        raise UsageError(f'{path}:{number} needs a non-empty "question"')
    return Question(str(record.get("id", number)), str(record["question"]), record.get("guidelines"))


def answered_ids(out: Path | None) -> set[str]:
    """Ids in an earlier output file that got an answer (failed ones are asked again)."""
    if out is None or not out.exists():
        return set()
    done = set()
    for line in out.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # A line cut short by a crash: that question is simply asked again.
        if record.get("answer") is not None:
            done.add(str(record.get("id")))
    return done


def batch_exit_code(results: list[RunResult]) -> ExitCode:
    """0 when every answer is verified; else the most serious outcome among them."""
    codes = {r.exit_code() for r in results}
    for code in (ExitCode.INTERRUPTED, ExitCode.TERMINATED, ExitCode.MODEL_UNREACHABLE, ExitCode.SETUP,
                 ExitCode.FAILED, ExitCode.TIME_LIMIT, ExitCode.COST_LIMIT, ExitCode.UNVERIFIED):
        if code in codes:
            return code
    return ExitCode.VERIFIED


def ask_batch(data_dir: Path, questions: list[Question], config: Config, workers: int,
              on_result: Callable[[Question, RunResult], None], emit: Sink,
              models_factory: Callable[[], Models] | None = None) -> list[RunResult]:
    """Analyse `data_dir` once, then answer every question, `workers` at a time."""
    if workers < 1:
        raise UsageError("--workers must be at least 1")
    data_dir = check_data_folder(data_dir)
    if models_factory is None:
        check_models(config)
        models_factory = lambda: build_models(config)  # noqa: E731 - one Models per question: own usage.
    analysis_folder = open_run_folder(config, data_dir)
    try:
        emit = fanout(analysis_folder, emit)
        agent = make_agent(config, models_factory(), data_dir, analysis_folder, emit)
        try:
            files = analyse(agent, config, data_dir, emit)
        finally:
            agent.executor.close()
    finally:
        analysis_folder.close()
    results: list[RunResult] = []
    stop = threading.Event()

    def answer(question: Question) -> RunResult:
        return ask(AskRequest(data_dir, question.question, question.guidelines, stop), config, lambda event: None,
                   models=models_factory(), files=files)

    pool = ThreadPoolExecutor(max_workers=workers)
    futures = {pool.submit(answer, q): q for q in questions}
    reported: set = set()

    def report(future) -> None:
        reported.add(future)
        results.append(future.result())
        on_result(futures[future], results[-1])

    try:
        for future in as_completed(futures):  # Runs in this thread only: on_result needs no lock.
            report(future)
    except (KeyboardInterrupt, Terminated):
        # Ctrl-C: questions not started are dropped; running ones end as "interrupted" at their next
        # model call, and their results are still reported, so a rerun with --out asks them again.
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        for future in futures:
            if future not in reported and future.done() and not future.cancelled():
                report(future)
        raise
    pool.shutdown()
    return results
