"""Many questions over one folder: analyse once, answer in parallel, one JSON line per answer.

A rerun with the same output file skips the questions it already answered, so a long batch that
was cut short resumes where it stopped.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from dsstar_cli.config import Config
from dsstar_cli.errors import StopRequest, Terminated, UsageError
from dsstar_cli.events import Sink
from dsstar_cli.model import Models
from dsstar_cli.result import ExitCode, RunResult, overall_exit_code
from dsstar_cli.model_check import check_models
from dsstar_cli.engine.run_engine import RunEngine
from dsstar_cli.runner import (AskRequest, analyse, ask, build_models, check_data_folder, check_usable,
                               description_cache, make_agent, open_scratch_folder)


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


def batch_exit_code(results: list[RunResult], strict: bool = False) -> ExitCode:
    """0 when every answer is verified; else the most serious outcome among them."""
    return overall_exit_code([r.exit_code(strict) for r in results])


def ask_file(data_dir: Path | str, questions_file: Path, config: Config, workers: int, out: Path | None,
             on_line: Callable[[str], None], note: Callable[[str], None], strict: bool = False,
             fresh: bool = False) -> ExitCode:
    """`ask --questions FILE [--out FILE]`: the questions not yet answered in `out`, one JSON line each
    (given to `on_line` and appended to `out`); `note` gets the progress lines. Returns the exit code,
    also after Ctrl-C or SIGTERM (the lines of the questions answered by then are kept)."""
    questions = read_questions(questions_file)
    done = answered_ids(out)
    todo = [q for q in questions if q.id not in done]
    note(f"{len(questions)} question(s), {len(questions) - len(todo)} already answered in {out}, {len(todo)} "
         f"to ask with {workers} worker(s)" if done else f"{len(todo)} question(s) to ask with {workers} worker(s)")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
    sink = out.open("a", encoding="utf-8") if out is not None else None
    answered: list[RunResult] = []

    def on_result(question: Question, result: RunResult) -> None:
        answered.append(result)
        line = json.dumps({"id": question.id, **result.as_dict(strict)}, ensure_ascii=False, default=str) + "\n"
        if sink:
            sink.write(line)
            sink.flush()
        on_line(line)
        note(f"[{question.id}] {result.outcome}: {result.answer!r}")

    try:
        results = ask_batch(data_dir, todo, config, workers, on_result, lambda event: None, fresh=fresh) if todo else []
    except (KeyboardInterrupt, Terminated) as exc:
        rerun = "rerun with the same --out to ask the rest" if out else "with --out FILE a rerun skips the answered"
        note(f"interrupted after {sum(r.answer is not None for r in answered)} answer(s); {rerun}")
        return ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED
    finally:
        if sink:
            sink.close()
    return batch_exit_code(results, strict)


def ask_batch(data_dir: Path | str, questions: list[Question], config: Config, workers: int,
              on_result: Callable[[Question, RunResult], None], emit: Sink,
              models_factory: Callable[[], Models] | None = None, fresh: bool = False) -> list[RunResult]:
    """Analyse `data_dir` once (a folder; with engine: spark, a location the cluster reads), then
    answer every question, `workers` at a time; `fresh`: without the folder's memory (bench
    measures the agent, not the memory)."""
    if workers < 1:
        raise UsageError("--workers must be at least 1")
    engine = RunEngine.open(config, data_dir, check_data_folder)  # Spark: connects, or one line why not.
    try:
        if models_factory is None:
            check_models(config)
            models_factory = lambda: build_models(config)  # noqa: E731 - one Models per question: own usage.
        if engine.spark is None:
            data_dir = Path(engine.location)
            files = analyse_once(data_dir, config, models_factory, emit)
            check_usable(files, data_dir)  # Once, not once per question.
        else:  # Each question's own session registers the tables these describe (RunEngine.take).
            files = engine.describe(lambda: [], config, emit, description_cache(config, Path(engine.location)))
    finally:
        engine.close()
    stop = StopRequest()

    def answer(question: Question) -> RunResult:
        return ask(AskRequest(data_dir, question.question, question.guidelines, stop, fresh=fresh), config,
                   lambda event: None, models=models_factory(), files=files)

    return _answer_all(questions, answer, workers, on_result, stop)


def analyse_once(data_dir: Path, config: Config, models_factory: Callable[[], Models], emit: Sink) -> list:
    """The local folder's descriptions, for every question. The analysis is not a run: `dsstar runs`
    lists the questions' runs only. Its folder (the sandbox's working folder while files are
    described) goes once it is done; what it made, the descriptions, is in every question's run and
    in the cache."""
    analysis_folder = open_scratch_folder(config, data_dir)
    try:
        agent = make_agent(config, models_factory(), data_dir, analysis_folder, emit)
        try:
            return analyse(agent, config, data_dir, emit)
        finally:
            agent.executor.close()
    finally:
        analysis_folder.discard()


STOP_GRACE_S = 2.0  # After Ctrl-C or SIGTERM, how long running questions get to report as interrupted.


def _answer_all(questions: list[Question], answer: Callable[[Question], RunResult], workers: int,
                on_result: Callable[[Question, RunResult], None], stop: StopRequest) -> list[RunResult]:
    """Answer on `workers` daemon threads; report each result from this (the main) thread.

    Daemon threads, not a ThreadPoolExecutor: the interpreter joins an executor's threads at exit, so a
    question stuck in a call or a script would keep a stopped process alive. On Ctrl-C or SIGTERM
    (which only this thread receives), questions not started are dropped and running ones are asked to
    stop; they end as interrupted at their next check (a model call in flight is abandoned at once) and
    are reported if they do so within STOP_GRACE_S, then the signal goes on. Whatever still runs then
    dies with the process (the sandbox worker of a script in flight included: it never outlives dsstar).
    """
    todo: queue.SimpleQueue[Question] = queue.SimpleQueue()
    for question in questions:
        todo.put(question)
    finished: queue.Queue = queue.Queue()
    running = [0]
    lock = threading.Lock()

    def work() -> None:
        while not stop.is_set():
            try:
                question = todo.get_nowait()
            except queue.Empty:
                return
            with lock:
                running[0] += 1
            try:
                finished.put((question, answer(question), None))
            except BaseException as exc:  # Re-raised in the main thread, as a pool's future would.
                finished.put((question, None, exc))

    for _ in range(min(workers, len(questions))):
        threading.Thread(target=work, name="dsstar-batch", daemon=True).start()
    results: list[RunResult] = []

    def report(item) -> None:
        question, result, error = item
        if error is not None:
            raise error
        results.append(result)
        on_result(question, result)

    try:
        for _ in questions:
            report(finished.get())  # This thread only: on_result needs no lock. A signal interrupts the wait.
    except (KeyboardInterrupt, Terminated) as signal:
        stop.request(signal)
        with lock:
            unreported = running[0] - len(results)
        deadline = time.monotonic() + STOP_GRACE_S
        while unreported > 0 and (left := deadline - time.monotonic()) > 0:
            try:
                item = finished.get(timeout=left)
            except queue.Empty:
                break
            unreported -= 1
            if item[2] is None:
                report(item)
        raise
    except BaseException:
        stop.set()  # A failure in one question ends the batch: the others stop at their next check.
        raise
    return results
