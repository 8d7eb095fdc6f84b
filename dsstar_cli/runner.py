"""One `dsstar ask`: check the inputs, build the parts, analyse the folder, run the loop, keep the result.

The command line calls `ask()` with a validated Config and an event sink; nothing here prints.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from dsstar_cli import tables
from dsstar_cli.agent import Agent, Budget
from dsstar_cli.artifacts import ANSWER_CSV, listed
from dsstar_cli.analyzer import FileDescription, analyze_folder
from dsstar_cli.analyzer.cache import DescriptionCache, default_cache_dir
from dsstar_cli.analyzer.discover import has_data_files
from dsstar_cli.analyzer.retriever import CHARS_PER_TOKEN, Selection, litellm_embedder, select_files
from dsstar_cli.analyzer.limits import AnalyzerLimits
from dsstar_cli.analyzer.llm_describer import LLMDescriber
from dsstar_cli.config import ROLES, Config, default_values, with_flags
from dsstar_cli.engine import settings as engine_settings
from dsstar_cli.engine.run_engine import RunEngine
from dsstar_cli.errors import DataFolderError, DsstarError, Terminated, UsageError
from dsstar_cli.events import Event, Sink, fanout
from dsstar_cli import followup
from dsstar_cli.followup import FollowUp
from dsstar_cli.history import find_run, is_run_folder
from dsstar_cli.loop import DSStarLoop, LoopResult, Task
from dsstar_cli.memory import Recall, instant
from dsstar_cli.model_check import ModelCheck
from dsstar_cli.model import ChatModel, LiteLLMModel, Models, RoleUsage
from dsstar_cli.roles.context import files_used
from dsstar_cli.result import RunResult
from dsstar_cli.runlog import SCRATCH_PREFIX, RunFolder, choose_run_root, inside, run_root_candidates
from dsstar_cli.sandbox import Executor
from dsstar_cli.secrets import redact, redacting, secret_values
from dsstar_cli.textmap import map_fields


@dataclass
class AskRequest:
    data_dir: Path | str  # a folder; with engine: spark, a location the cluster reads (s3a://..., a path)
    question: str
    guidelines: str | None = None
    stop: threading.Event | None = None  # Batch mode: set on Ctrl-C, so the run ends as interrupted
    started: float | None = None  # time.monotonic() when the user started it: --timeout counts from there
    follow: str | None = None  # A follow-up: the run it continues (followup.LAST, or an id as `runs show` takes)
    fresh: bool = False  # Neither read nor write the folder's memory (memory/).


def check_data_folder(data_dir: Path) -> Path:
    """The folder, resolved, or a DataFolderError that says what is wrong with it."""
    if not data_dir.exists():
        raise DataFolderError(f"data folder {data_dir} does not exist")
    if not data_dir.is_dir():
        raise DataFolderError(f"{data_dir} is a file, not a folder: point dsstar at the folder that holds it")
    if not os.access(data_dir, os.R_OK | os.X_OK):
        raise DataFolderError(f"data folder {data_dir} cannot be read (permission denied)")
    if not has_data_files(data_dir):
        raise DataFolderError(f"data folder {data_dir} has no data files (hidden files and folders are skipped)")
    return data_dir.resolve()


NAMED = 3  # Files named in the refusal; the others are counted.


def check_usable(files: list[FileDescription], data_dir: Path) -> None:
    """A DataFolderError when no file holds anything to read (all empty, junk bytes, unreadable):
    said after the analysis and before any model call, instead of a run that answers from nothing."""
    if any(not f.no_data for f in files):
        return
    said = "; ".join(f"{f.path}: {f.error}" for f in files[:NAMED])
    more = f"; and {len(files) - NAMED} more such file(s)" if len(files) > NAMED else ""
    links = " (--follow-links reads what links lead to outside it)" if any(f.format == "link" for f in files) else ""
    raise NoUsableData(f"data folder {data_dir} has no usable data: {said}{more}{links}")


class NoUsableData(DataFolderError):
    """The analysis found nothing to read: no model was asked anything, so the run folder goes."""


def check_question(question: str) -> str:
    if not question.strip():
        raise UsageError("the question is empty: ask something, e.g. dsstar ask ./data \"Which merchant ...?\"")
    return question.strip()


def build_models(config: Config, ready: Callable[[], None] | None = None) -> Models:
    """The configured models; `ready` (ModelCheck.wait) is awaited before the first call."""
    def make(name: str) -> ChatModel:
        return LiteLLMModel(name, api_base=config["api_base"], timeout_s=config["llm.timeout_s"],
                            temperature=config["llm.temperature"], max_tokens=config["llm.max_tokens"],
                            attempts=config["llm.retries"], max_delay_s=config["llm.retry_max_delay_s"])

    default = make(config["model"])
    overrides = {role: make(config.model_for(role)) for role in ROLES if config[f"roles.{role}.model"]}
    return Models(default, overrides, ready)


def open_run_folder(config: Config, data_dir: Path) -> RunFolder:
    """A new run folder under the first usable place outside the data folder (RunFolderError if none)."""
    return RunFolder.create(choose_run_root(data_dir, run_root_candidates(config["run_dir"])))


def open_scratch_folder(config: Config, data_dir: Path) -> RunFolder:
    """A folder like a run's, for work that is not a run (a batch's shared analysis): where a run's
    would go, hidden from the history; its user discards it when done."""
    return RunFolder.create(choose_run_root(data_dir, run_root_candidates(config["run_dir"])), SCRATCH_PREFIX)


def ask(request: AskRequest, config: Config, emit: Sink, models: Models | None = None,
        files: list[FileDescription] | None = None) -> RunResult:
    """Answer one question about one folder.

    `models` replaces the configured ones (tests, demos); `files` reuses descriptions already made
    (batch mode analyses the folder once for every question).
    """
    question = check_question(request.question)
    engine = RunEngine.open(config, request.data_dir, check_data_folder)  # Spark: connects, or one line why not.
    try:
        # The memory and follow-ups know local folders only (they fingerprint the files a script read).
        local = engine.spark is None
        if not local and request.follow:
            raise UsageError("--continue/--follow is not supported on engine: spark yet")
        data_dir = engine.local_dir
        follow = followup.resolve(request.follow, data_dir, config["run_dir"]) if local else None
        recall = Recall.open(data_dir, question, request.guidelines, use=local and not request.fresh,
                             answers=follow is None)
        try:
            if recall.at_once() is not None:  # An unchanged folder: the remembered answer, no model, no sandbox.
                return _from_memory(recall, request, config, models, emit)
            return _ask(request, config, emit, models, files, question, engine, follow, recall)
        finally:
            recall.close()
    finally:
        engine.close()


def _from_memory(recall: Recall, request: AskRequest, config: Config, models: Models | None, emit: Sink) -> RunResult:
    run_folder = open_run_folder(config, recall.data_dir)
    try:
        names = models.names() if models else {"default": config["model"] or "none (not needed)"}
        return instant.answer(recall.at_once(), recall.data_dir, recall.question, recall.guidelines, run_folder,
                              names, config.max_rounds, emit, request.started or time.monotonic())
    finally:
        run_folder.close()


def _ask(request: AskRequest, config: Config, emit: Sink, models: Models | None, files: list[FileDescription] | None,
         question: str, engine: RunEngine, follow: FollowUp | None, recall: Recall) -> RunResult:
    check = None
    if models is None:  # The model check (litellm's import) overlaps the run's start: see model_check.py.
        check = ModelCheck(config)
        models = build_models(config, ready=check.wait)
    try:
        run_folder = open_run_folder(config, engine.local_dir)
        return _run_in(run_folder, check, question, request.guidelines, engine, config, models, emit, files,
                       stop=request.stop, started=request.started, follow=follow, recall=recall)
    finally:
        if check is not None:
            check.join_if_settled(CHECK_JOIN_S)


CHECK_JOIN_S = 60.0  # At most; it is imports, usually done long before the run ends.


def _run_in(run_folder: RunFolder, check: ModelCheck | None, *args, **kwargs) -> RunResult:
    """`_run`, closing the run folder after, and discarding it when the model check failed or the
    folder held no usable data: no model was asked anything, so there is nothing to keep (the
    descriptions are in the cache)."""
    try:
        return _run(*args, run_folder=run_folder, check=check, **kwargs)
    except DsstarError as exc:
        if isinstance(exc, NoUsableData) or (check is not None and check.failed()):
            run_folder.discard()
        raise
    finally:
        run_folder.close()


def analyzer_limits(config: Config) -> AnalyzerLimits:
    return AnalyzerLimits(config["analyzer.max_description_chars"], config["analyzer.sample_rows"],
                          config["analyzer.max_text_bytes"], config["analyzer.max_memory_mb"],
                          config["analyzer.file_timeout_s"])


def make_agent(config: Config, models: Models, data_dir: Path, run_folder: RunFolder, emit: Sink) -> Agent:
    executor = Executor(run_folder.work, data_dir, timeout_s=config["code_timeout_s"],
                        memory_mb=config["sandbox.memory_mb"], max_output_bytes=config["sandbox.max_output_bytes"],
                        tier=config["sandbox.tier"], require=config["sandbox.require"],
                        warm=config["sandbox.warm_worker"], max_workdir_mb=config["sandbox.max_run_folder_mb"],
                        follow_links=config["follow_links"], strong_backend=config["sandbox.strong_backend"])
    return Agent(models, executor, emit, run_folder, config["debug_attempts"])


def description_cache(config: Config, data_dir: Path) -> DescriptionCache | None:
    """The description cache, or None when it is off or would be written inside the data folder."""
    if not config["analyzer.cache"]:
        return None
    folder = config["analyzer.cache_dir"]
    cache_dir = Path(folder).expanduser() if folder else default_cache_dir()
    return None if inside(cache_dir, data_dir) else DescriptionCache(cache_dir)


def analyse(agent: Agent, config: Config, data_dir: Path, emit: Sink,
            started: float | None = None) -> list[FileDescription]:
    """The Data File Analyzer, with the model describing formats no built-in profiler knows; the
    run's time budget (counted from `started`) bounds it too."""
    limits = analyzer_limits(config)
    describer = LLMDescriber(agent, limits.max_description_chars)
    mode = config["analyzer.mode"]
    describing_model = config.model_for("analyzer") if mode != "builtin" else None
    timeout = config["budget.timeout_s"]
    return analyze_folder(data_dir, limits, emit, mode, describer, cache=description_cache(config, data_dir),
                          cache_context=f"describer={describing_model}", follow_links=config["follow_links"],
                          deadline=(started or time.monotonic()) + timeout if timeout else None)


def retrieve(files: list[FileDescription], question: str, config: Config, emit: Sink,
             deadline: float | None = None) -> Selection:
    """The retriever: which descriptions go into prompts when there are too many."""
    embedding_model = config["retriever.embedding_model"]
    embed = litellm_embedder(embedding_model, config["api_base"], config["llm.timeout_s"],
                             deadline) if embedding_model else None
    selection = select_files(files, question, config["retriever.max_files"],
                             config["retriever.max_description_tokens"], embed)
    if selection.method != "all":
        emit(Event("retrieval", {"method": selection.method, "described": [f.path for f in selection.described],
                                 "listed": len(selection.listed), "note": selection.note}))
    return selection


STATE_FILE = "state.json"


def _run(question: str, guidelines: str | None, engine: "RunEngine | Path", config: Config, models: Models,
         emit: Sink, files: list[FileDescription] | None, *, run_folder: RunFolder,
         check: ModelCheck | None = None, resumed: dict | None = None, stop: threading.Event | None = None,
         started: float | None = None, follow: FollowUp | None = None, recall: Recall | None = None) -> RunResult:
    """`emit` is the caller's (the display, --jsonl): it sees every event redacted, and nothing until
    the model check has passed (see HeldEvents), so a run whose check fails, and whose folder is
    discarded, never names that folder. The run folder's journal gets every event at once."""
    clock = {"start": started or time.monotonic()}
    if not isinstance(engine, RunEngine):  # A resumed run's folder, checked already.
        engine = RunEngine(engine_settings(config), str(engine))
    data_dir = engine.location
    shown = redacting(emit)
    emit = fanout(run_folder, shown)
    held = check.held(shown) if check else None
    early = fanout(run_folder, held) if held else emit  # What is said before the check has passed.
    agent = make_agent(config, models, engine.sandbox_data_dir(run_folder.path), run_folder, emit)
    early(Event("run_started", {"question": question, "data_dir": str(data_dir), "run_dir": str(run_folder.path),
                                "max_rounds": config.max_rounds, "models": models.names(),
                                "resumed": resumed is not None, "sandbox": agent.executor.describe(),
                                "follows": follow.run_id if follow else None}))
    if agent.executor.warning:
        early(Event("warning", {"source": "sandbox", "message": agent.executor.warning}))
    if follow is not None:
        early(Event("following", {"run": follow.run_id, "question": follow.question, "answer": follow.answer}))
    if check is not None:
        check.start()  # The question is out (the command line showed it): litellm's import now overlaps the rest.
    loop = None

    def idle_loop() -> DSStarLoop:  # For a run stopped before its loop started: its empty state.
        return DSStarLoop(agent, config.max_rounds, config["sandbox.prompt_output_chars"])

    try:
        agent.budget = make_budget(config, clock["start"], stop)  # The model's descriptions of files count too.
        analysed_here = files is None  # (A batch analyses the folder, and checks it, once for every question.)
        if files is None:  # Spark: the tables are registered as they are described.
            files = engine.describe(lambda: analyse(agent, config, Path(data_dir), early, clock["start"]), config,
                                    early, description_cache(config, Path(data_dir)))
        else:
            engine.take(files)
        if analysed_here and resumed is None and engine.spark is None:
            check_usable(files, Path(data_dir))
        engine_note = engine.attach(agent.executor, files)
        timeout = config["budget.timeout_s"]
        selection = _selection(resumed, files) if resumed else retrieve(
            files, question, config, early, clock["start"] + timeout if timeout else None)
        if held is not None:
            held.release()  # The model is usable, or the run ends here with the check's one line.
        clock["analysed"] = time.monotonic()

        def checkpoint(loop_state: dict) -> None:
            run_folder.write(STATE_FILE, json.dumps({
                "question": question, "guidelines": guidelines, "data_dir": str(data_dir), "config": config.values,
                "files": [f.as_dict() for f in files], "described": [f.path for f in selection.described],
                "usage": {role: u.as_dict() for role, u in models.usage.items()}, "loop": loop_state,
                "follow": follow.as_dict() if follow else None}))

        loop = DSStarLoop(agent, config.max_rounds, config["sandbox.prompt_output_chars"], checkpoint,
                          document_chars=config["retriever.max_document_tokens"] * CHARS_PER_TOKEN,
                          description_tokens=config["retriever.max_description_tokens"])
        task = Task(question, data_dir, guidelines, earlier=follow.context if follow else None, engine_note=engine_note)
        replayed = recall.recheck(agent, loop.context_for(task, selection.described, selection.listed),
                                  loop.output_chars) if recall else None  # A remembered answer, files changed.
        state = resumed["loop"] if resumed else None
        if replayed is None and recall is not None:  # What earlier verified runs established (memory/knowledge.py);
            task.memory = recall.knowledge(agent)    # a question it covers starts with a short round (shortcut.py).
            if config["memory.shortcut"]:
                first = recall.shortcut(agent, loop.context_for(task, selection.described, selection.listed),
                                        loop.output_chars, config.max_rounds)
                replayed, state = (first, None) if isinstance(first, LoopResult) else (None, first)
        outcome = replayed or loop.run(task, selection.described, selection.listed, state=state)
    except (KeyboardInterrupt, Terminated) as exc:
        # Stop cleanly: the script in flight was killed on the way out; keep what was done.
        signal_name = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
        loop = loop or idle_loop()
        next_step = (f"continue with: dsstar resume {run_folder.path}" if (run_folder.path / STATE_FILE).exists()
                     else "it stopped before its first round ended, so ask the question again")
        outcome = loop.partial("interrupted", f"interrupted by {signal_name}; {next_step}", error_kind=signal_name)
    except DsstarError:
        raise
    except Exception as exc:  # A dsstar bug: this question fails with one line and keeps its traceback;
        loop = loop or idle_loop()  # a batch goes on.
        outcome = loop.partial("failed", internal_error(exc, run_folder), error_kind="internal")
    finally:
        agent.executor.close()
    clock["finished"] = time.monotonic()
    result = RunResult(
        question=question, answer=outcome.answer, outcome=outcome.outcome, verified=outcome.outcome == "verified",
        reason=outcome.reason, rounds=outcome.rounds, max_rounds=config.max_rounds, plan=outcome.plan,
        history=outcome.history, final_code=outcome.final_code, final_output=outcome.final_output,
        answer_from=outcome.answer_from, note=outcome.note, assumptions=list(outcome.reading.assumptions),
        alternatives=[alt.as_dict() for alt in outcome.reading.alternatives],
        files=[_file_summary(f) for f in files or []],
        files_used=files_used(files or [], (loop.scripts() or [outcome.solution_code]) + [outcome.final_code]),
        usage=_usage(models), models=models.names(), elapsed_s=_elapsed(clock),
        run_dir=str(run_folder.path), data_dir=str(data_dir), guidelines=guidelines,
        artifacts=listed(run_folder.artifacts()), error_kind=outcome.error_kind, sandbox=agent.executor.describe(),
        follows=follow.run_id if follow else None, from_memory=recall.provenance if recall else None,
        warnings=[agent.executor.warning] if agent.executor.warning else [],
    )
    result = with_table(redacted(result), run_folder)
    run_folder.write("result.json", result.to_json())
    if recall is not None:
        recall.remember(result, outcome.solution_code)
    emit(Event("answer", {"answer": result.answer, "outcome": result.outcome, "verified": result.verified,
                          "rounds": result.rounds, "reason": result.reason, "answer_from": result.answer_from,
                          "note": result.note, "assumptions": result.assumptions,
                          "alternatives": result.alternatives}))
    return result


ERROR_LOG = "error.log"


def with_table(result: RunResult, run_folder: RunFolder) -> RunResult:
    """A table answer's rows and columns in the result, and the table kept as answer.csv beside it."""
    table = tables.parse(result.answer)
    if table is None:
        return result
    run_folder.write(ANSWER_CSV, table.to_csv())
    return dataclasses.replace(result, table=table.as_dict(), artifacts=result.artifacts + listed([ANSWER_CSV]))


def internal_error(exc: Exception, run_folder: RunFolder) -> str:
    """The reason for a run ended by an unexpected exception, its traceback kept in the run folder."""
    kept = f"the traceback is in {run_folder.path / ERROR_LOG}"
    try:
        run_folder.write(ERROR_LOG, traceback.format_exc())
    except (OSError, DsstarError) as failed:
        kept = f"its traceback could not be kept ({failed})"
    summary = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:300]
    return f"internal error ({summary}); this is a dsstar bug, please report it: {kept}"


def redacted(result: RunResult) -> RunResult:
    """The result with every credential value masked: it goes to stdout, --json and the run folder."""
    secrets = secret_values()
    return map_fields(result, lambda text: redact(text, secrets)) if secrets else result


def make_budget(config: Config, started: float, stop: threading.Event | None = None) -> Budget:
    timeout = config["budget.timeout_s"]
    return Budget(max_cost_usd=config["budget.max_cost_usd"], timeout_s=timeout,
                  deadline=started + timeout if timeout else None, stop=stop)


def _selection(resumed: dict, files: list[FileDescription]) -> Selection:
    """The same files in the same prompts as before the run stopped."""
    described = set(resumed["described"])
    return Selection([f for f in files if f.path in described], [f for f in files if f.path not in described])


def resume(ref: str | Path, emit: Sink, models: Models | None = None, flags: dict | None = None,
           run_dir_setting: str | None = None) -> RunResult:
    """Continue a stopped run from its last completed round, with its question, config and files.

    `ref` is the run folder (relative to the current directory or absolute) or its id (see
    `dsstar runs`; `run_dir_setting` says where else to look). `flags` (--model, --api-base, ...)
    replace the run's own settings, e.g. for a server that moved."""
    run_dir = find_run(str(ref), run_dir_setting)
    state = load_state(run_dir)
    # Defaults first: a run checkpointed by an older dsstar lacks the keys added since (follow_links).
    config = Config({**default_values(), **state["config"]}, {key: "the resumed run" for key in state["config"]})
    config = with_flags(config, flags or {})
    if config["engine"] != "duckdb":
        raise UsageError("resuming a run on engine: spark is not supported yet: ask the question again")
    data_dir = check_data_folder(Path(state["data_dir"]))
    check = None
    if models is None:
        check = ModelCheck(config)
        models = build_models(config, ready=check.wait)
    for role, usage in state.get("usage", {}).items():  # Cost so far counts against --max-cost.
        models.usage[role] = RoleUsage(usage["calls"], usage["input_tokens"], usage["output_tokens"],
                                       usage["cost_usd"], usage.get("cached_input_tokens", 0))
    files = [FileDescription(**f) for f in state["files"]]
    try:
        run_folder = RunFolder(run_dir, resume=True)
        try:
            follow = FollowUp(**state["follow"]) if state.get("follow") else None
            return _run(state["question"], state["guidelines"], data_dir, config, models, emit, files,
                        run_folder=run_folder, check=check, resumed=state, follow=follow)
        finally:
            run_folder.close()  # Never discarded: it holds the run being resumed.
    finally:
        if check is not None:
            check.join_if_settled(CHECK_JOIN_S)


def load_state(run_dir: Path) -> dict:
    if not is_run_folder(run_dir):
        raise UsageError(f"{run_dir} is not a run folder (see `run_dir` in a --json result, or `dsstar runs`)")
    finished = run_dir / "result.json"
    if finished.exists():
        outcome = json.loads(finished.read_text(encoding="utf-8")).get("outcome")
        if outcome != "interrupted":
            raise UsageError(f"the run in {run_dir} already finished ({outcome}): nothing to resume")
    try:
        return json.loads((run_dir / STATE_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UsageError(f"{run_dir} has no checkpoint: it stopped before its first round ended, so ask the "
                         "question again") from exc
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the checkpoint in {run_dir}: {exc}") from exc


def _elapsed(clock: dict[str, float]) -> dict[str, float]:
    start, end = clock["start"], clock["finished"]
    analysed = clock.get("analysed", end)
    return {"analysis": round(analysed - start, 3), "loop": round(end - analysed, 3), "total": round(end - start, 3)}


def _file_summary(description: FileDescription) -> dict:
    return {"path": description.path, "format": description.format, "size_bytes": description.size_bytes,
            "method": description.method, "error": description.error}


def _usage(models: Models) -> dict:
    return {**{role: usage.as_dict() for role, usage in models.usage.items()}, "total": models.total().as_dict()}
