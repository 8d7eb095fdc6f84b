"""The command line: parse, call the core, render. No logic of its own."""

from __future__ import annotations

import json
import signal
import sys
import traceback
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from dsstar_cli import STARTED, __version__
from dsstar_cli.config import ConfigError, load_config, packaged_default_text
from dsstar_cli.display import JsonlSink, LiveDisplay, PlainDisplay, plain_result, render_result
from dsstar_cli.errors import DsstarError, Terminated, UsageError
from dsstar_cli.events import Sink, fanout
from dsstar_cli.result import EXIT_CODE_HELP, ExitCode, error_json, json_schema
from dsstar_cli.terminal import terminal_safe, visible
from dsstar_cli.textmap import map_fields

# pandas and litellm are imported inside the commands that need them, so --help stays fast.

app = typer.Typer(
    name="dsstar",
    help="Ask a folder of data files a question; get a verified answer (the DS-STAR method).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(help="Show or create the configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")


def _version(value: bool) -> None:
    if value:
        print(f"dsstar {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    """dsstar: a data-science agent for the command line."""


def _stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def _is_live(console: Console) -> bool:
    return console.is_terminal and not console.is_dumb_terminal


def _load_config(config_file: Optional[Path], **flags):
    try:
        return load_config(config_file, overrides=flags)
    except ConfigError as exc:
        if str(exc).startswith("flag "):
            raise UsageError(str(exc)[5:]) from exc
        raise


def _fail(exc: DsstarError, as_json: bool, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    sys.stderr.write(f"dsstar: error: {visible(str(exc))}\n")
    if as_json:
        sys.stdout.write(error_json(exc.kind, str(exc), exc.exit_code) + "\n")
    raise typer.Exit(exc.exit_code)


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def _write_json(obj: dict) -> None:
    """JSON goes straight to stdout, never through Rich (which would wrap lines and eat [brackets])."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=str, indent=2) + "\n")
    sys.stdout.flush()


@app.command(epilog=EXIT_CODE_HELP)
def ask(
    data_dir: Path = typer.Argument(..., help="Folder of data files (read-only: it is never modified)."),
    question: Optional[str] = typer.Argument(None, help="The question, in plain language."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="litellm model id, e.g. openai/gpt-4.1."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="Base URL of an OpenAI-compatible server."),
    config_file: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config file."),
    max_rounds: Optional[int] = typer.Option(None, "--max-rounds", help="Round cap (default 10)."),
    code_timeout: Optional[float] = typer.Option(None, "--code-timeout", help="Seconds a script may run."),
    llm_timeout: Optional[float] = typer.Option(None, "--llm-timeout",
                                                help="Wall-clock seconds each attempt of a model call may take."),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="Dollar budget for the run's model calls."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Seconds the whole run may take."),
    guidelines: Optional[str] = typer.Option(None, "--guidelines", "-g",
                                             help='Answer format, e.g. "round to 2 decimals".'),
    questions: Optional[Path] = typer.Option(None, "--questions", help="Batch: a JSONL (id, question, "
                                             "guidelines) or text file (one question a line)."),
    workers: int = typer.Option(1, "--workers", "-w", help="Batch: questions answered in parallel."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Batch: also append result lines here; "
                                       "a rerun skips questions already answered."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON result object on stdout, nothing else."),
    jsonl: bool = typer.Option(False, "--jsonl", help="Print every event as a JSON line on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the answer."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress on stderr."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Describe every file afresh (skip the cache)."),
    follow_links: bool = typer.Option(False, "--follow-links", help="Also read files that links in the folder "
                                      "lead to outside it (their content goes to the model)."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
) -> None:
    """Answer QUESTION from the files in DATA_DIR (or every question in --questions FILE).

    The answer goes to stdout, progress to stderr. Each run's prompts, scripts and outputs are kept in a run folder.
    """
    signal.signal(signal.SIGTERM, _on_sigterm)
    console = _stderr_console()
    display = None
    try:
        if as_json and jsonl:
            raise UsageError("choose one of --json and --jsonl")
        if (question is None) == (questions is None):
            raise UsageError("give either a QUESTION or --questions FILE")
        config = _load_config(config_file, model=model, api_base=api_base, max_rounds=max_rounds,
                              code_timeout_s=code_timeout, **_cache_flag(no_cache), **_links_flag(follow_links),
                              **{"llm.timeout_s": llm_timeout, "budget.max_cost_usd": max_cost,
                                 "budget.timeout_s": timeout})
        if questions is not None:
            raise typer.Exit(_ask_batch(data_dir, questions, config, workers, out, quiet or no_progress))
        sinks: list[Sink] = [JsonlSink()] if jsonl else []
        if not (quiet or no_progress or jsonl):
            display = LiveDisplay(console) if _is_live(console) else PlainDisplay(sys.stderr)
            sinks.append(terminal_safe(display))
        from dsstar_cli.runner import AskRequest, ask as run_ask

        result = run_ask(AskRequest(data_dir, question, guidelines, started=STARTED), config, fanout(*sinks))
    except DsstarError as exc:
        _close(display)
        _fail(exc, as_json, debug)
    except (KeyboardInterrupt, Terminated) as exc:  # Before the run started: nothing to keep.
        _interrupted_before_start(exc, display, as_json, "interrupted before the run started")
    _close(display)
    _print_result(result, console, as_json, jsonl, quiet or no_progress)
    raise typer.Exit(result.exit_code())


@app.command(epilog=EXIT_CODE_HELP)
def resume(
    run_dir: Path = typer.Argument(..., help="The run folder of an interrupted or crashed run (its `run_dir`)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON result object on stdout, nothing else."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the answer."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress on stderr."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
) -> None:
    """Continue a stopped run from its last completed round, with the same question, config and files.

    API keys come from the environment, as for `ask`."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    console = _stderr_console()
    display = None
    try:
        if not (quiet or no_progress):
            display = LiveDisplay(console) if _is_live(console) else PlainDisplay(sys.stderr)
        from dsstar_cli.runner import resume as run_resume

        result = run_resume(run_dir, terminal_safe(display) if display else (lambda event: None))
    except DsstarError as exc:
        _close(display)
        _fail(exc, as_json, debug)
    except (KeyboardInterrupt, Terminated) as exc:
        _interrupted_before_start(exc, display, as_json, "interrupted before the run resumed")
    _close(display)
    _print_result(result, console, as_json, False, quiet or no_progress)
    raise typer.Exit(result.exit_code())


def _interrupted_before_start(exc: BaseException, display, as_json: bool, message: str) -> None:
    """Ctrl-C or SIGTERM before a run folder holds anything: say so and exit 130 or 143."""
    _close(display)
    code = ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED
    sys.stderr.write("dsstar: interrupted\n")
    if as_json:
        sys.stdout.write(error_json("interrupted", message, code) + "\n")
    raise typer.Exit(code)


def _print_result(result, console: Console, as_json: bool, jsonl: bool, silent: bool) -> None:
    if as_json:
        _write_json(result.as_dict())
        return
    if jsonl:
        return
    live = _is_live(console)
    shown = map_fields(result, visible)
    if not silent:
        render_result(shown, console) if live else plain_result(shown, sys.stderr)
    if result.answer is not None:  # Exactly as given to a pipe; made visible for a terminal.
        sys.stdout.write((shown.answer if sys.stdout.isatty() else result.answer) + "\n")
    elif silent:  # Otherwise the summary above already gave the reason: once is enough.
        sys.stderr.write(f"dsstar: no answer: {shown.reason}\n")


def _ask_batch(data_dir: Path, questions_file: Path, config, workers: int, out: Optional[Path], silent: bool) -> int:
    from dsstar_cli.batch import answered_ids, ask_batch, batch_exit_code, read_questions

    questions = read_questions(questions_file)
    done = answered_ids(out)
    todo = [q for q in questions if q.id not in done]
    if not silent:
        sys.stderr.write(f"dsstar: {len(questions)} question(s), {len(questions) - len(todo)} already answered "
                         f"in {out}, {len(todo)} to ask with {workers} worker(s)\n" if done else
                         f"dsstar: {len(todo)} question(s) to ask with {workers} worker(s)\n")
    sink = None
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        sink = out.open("a", encoding="utf-8")

    def on_result(question, result) -> None:
        line = json.dumps({"id": question.id, **result.as_dict()}, ensure_ascii=False, default=str) + "\n"
        for stream in (sys.stdout, sink) if sink else (sys.stdout,):
            stream.write(line)
            stream.flush()
        if not silent:
            sys.stderr.write(f"dsstar: [{question.id}] {result.outcome}: {result.answer!r}\n")

    answered: list = []
    try:
        results = ask_batch(data_dir, todo, config, workers, lambda q, r: (answered.append(r), on_result(q, r)),
                            lambda event: None) if todo else []
    except (KeyboardInterrupt, Terminated) as exc:
        rerun = "rerun with the same --out to ask the rest" if out else "with --out FILE a rerun skips the answered"
        sys.stderr.write(f"dsstar: interrupted after {sum(r.answer is not None for r in answered)} answer(s); "
                         f"{rerun}\n")
        return ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED
    finally:
        if sink:
            sink.close()
    return batch_exit_code(results)


def _close(display) -> None:
    if isinstance(display, LiveDisplay):
        display.close()


@app.command()
def bench(
    tasks_file: Path = typer.Argument(..., help="DABStep-format JSONL (task_id, question, guidelines, level, "
                                      "answer) or a KramaBench workload.json."),
    data_dir: Optional[Path] = typer.Option(None, "--data", "-d", help="Folder of the benchmark's data files "
                                            "(default for KramaBench: input/ beside workload.json)."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="litellm model id, e.g. openai/gpt-4.1."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="Base URL of an OpenAI-compatible server."),
    config_file: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config file."),
    max_rounds: Optional[int] = typer.Option(None, "--max-rounds", help="Round cap per task (default 10)."),
    workers: int = typer.Option(1, "--workers", "-w", help="Tasks answered in parallel."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write one scored JSON row per task here."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out: skip finished tasks."),
    submission: Optional[Path] = typer.Option(None, "--submission", help="Also write DABStep's submission file "
                                              "(task_id, agent_answer, reasoning_trace)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Only the first N (selected) tasks."),
    level: Optional[str] = typer.Option(None, "--level", help="Only tasks of this level: easy, medium or hard."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON instead of a table."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Describe every file afresh (skip the cache)."),
    follow_links: bool = typer.Option(False, "--follow-links", help="Also read files that links in the folder "
                                      "lead to outside it (their content goes to the model)."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
) -> None:
    """Answer a benchmark's tasks with the same pipeline as `ask`, score them with the benchmark's own
    rules, and print accuracy, rounds, calls, tokens, cost and time per level."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    from dsstar_cli.bench import harness, tasks as bench_tasks

    try:
        if resume and out is None:
            raise UsageError("--resume needs --out: the results file to continue")
        config = _load_config(config_file, model=model, api_base=api_base, max_rounds=max_rounds,
                              **_cache_flag(no_cache), **_links_flag(follow_links))
        selected = bench_tasks.select(bench_tasks.read_tasks(tasks_file), level, limit)
        folder = data_dir or bench_tasks.default_data_dir(tasks_file)
        if folder is None:
            raise UsageError("give the benchmark's data folder with --data DIR")
        plan = harness.plan_run(selected, out, resume)
        rows = list(plan.kept)
        sys.stderr.write(f"dsstar bench: {len(selected)} task(s), {len(plan.kept)} already done, "
                         f"{len(plan.todo)} to run with {workers} worker(s)\n")
        rows += _run_bench(harness, folder, plan.todo, config, workers, out)
    except DsstarError as exc:
        _fail(exc, as_json, debug)
    except (KeyboardInterrupt, Terminated) as exc:
        again = f"rerun with --out {out} --resume to run the rest" if out else "rerun to run them again"
        sys.stderr.write(f"dsstar bench: interrupted; {again}\n")
        raise typer.Exit(ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED)
    if submission is not None:
        harness.write_submission(submission, rows)
    summary = harness.summarize(rows)
    if as_json:
        _write_json({"summary": summary, "out": str(out) if out else None, "tasks": len(rows)})
    else:
        from dsstar_cli.display import bench_table

        # A pipe gets the table at a readable width rather than Rich's 80-column default.
        Console(highlight=False, width=None if sys.stdout.isatty() else 120).print(bench_table(summary))
    raise typer.Exit(_bench_exit_code(rows))


def _run_bench(harness, folder: Path, todo: list, config, workers: int, out: Optional[Path]) -> list[dict]:
    if not todo:
        return []
    sink = out.open("a", encoding="utf-8") if out is not None else None

    def on_row(row: dict) -> None:
        if sink:
            sink.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            sink.flush()
        mark = {True: "correct", False: "wrong", None: "not scored"}[row["correct"]]
        sys.stderr.write(f"dsstar bench: [{row['task_id']}] {row['outcome']}: {row['answer']!r} ({mark})\n")

    try:
        return harness.run_tasks(folder, todo, config, workers, on_row, lambda event: None)
    finally:
        if sink:
            sink.close()


def _bench_exit_code(rows: list[dict]) -> int:
    """0 when every task ran (right or wrong); else the most serious reason some did not."""
    kinds = {row.get("error_kind") for row in rows}
    for kind, code in (("SIGINT", ExitCode.INTERRUPTED), ("SIGTERM", ExitCode.TERMINATED),
                       ("model_config", ExitCode.SETUP), ("model_unreachable", ExitCode.MODEL_UNREACHABLE)):
        if kind in kinds:
            return code
    return ExitCode.VERIFIED


@app.command()
def describe(
    data_dir: Path = typer.Argument(..., help="Folder of data files."),
    config_file: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config file."),
    as_json: bool = typer.Option(False, "--json", help='Print {"files": [...]} as JSON.'),
    no_cache: bool = typer.Option(False, "--no-cache", help="Describe every file afresh (skip the cache)."),
    follow_links: bool = typer.Option(False, "--follow-links", help="Also read files that links in the folder "
                                      "lead to outside it (their content goes to the model)."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
) -> None:
    """Print the description of every file in DATA_DIR, as the planner sees them (no model call)."""
    from dsstar_cli.analyzer import analyze_folder
    from dsstar_cli.runner import analyzer_limits, check_data_folder, description_cache

    try:
        config = _load_config(config_file, **_cache_flag(no_cache), **_links_flag(follow_links))
        folder = check_data_folder(data_dir)
    except DsstarError as exc:
        _fail(exc, as_json, debug)
    console = _stderr_console()
    progress = _DescribeProgress(console) if _is_live(console) else None  # Counts only: no file text shown.
    mode = "builtin"  # Describing must not need a model; unknown formats get type and size.
    try:
        files = analyze_folder(folder, analyzer_limits(config), progress or (lambda event: None), mode,
                               cache=description_cache(config, folder), cache_context="describer=None",
                               follow_links=config["follow_links"])
    finally:
        if progress:
            progress.close()
    if as_json:
        _write_json({"data_dir": str(folder), "files": [f.as_dict() for f in files]})
    else:
        text = "\n\n".join(f.as_prompt() for f in files) + "\n"
        sys.stdout.write(visible(text) if sys.stdout.isatty() else text)


class _DescribeProgress:
    """A progress bar on stderr while `describe` works through a folder."""

    def __init__(self, console: Console):
        from dsstar_cli.display import analysis_progress

        self.bar = analysis_progress(console)
        self.task = None

    def __call__(self, event) -> None:
        if event.kind == "analysis_started":
            self.task = self.bar.add_task("Describing files", total=event.data["files"])
            self.bar.start()
        elif event.kind == "file_described" and self.task is not None:
            self.bar.update(self.task, advance=1)

    def close(self) -> None:
        self.bar.stop()


def _cache_flag(no_cache: bool) -> dict:
    return {"analyzer.cache": False} if no_cache else {}


def _links_flag(follow_links: bool) -> dict:
    """Only when given: without the flag, the config file's `follow_links` stands."""
    return {"follow_links": True} if follow_links else {}


@app.command()
def schema() -> None:
    """Print the JSON Schema of the `ask --json` result."""
    _write_json(json_schema())


@app.command()
def doctor(
    model: Optional[str] = typer.Option(None, "--model", "-m", help="litellm model id to check."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="OpenAI-compatible server to check."),
    config_file: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config file."),
) -> None:
    """Check the model, its credentials, the server, the sandbox and the run folder; say what to fix."""
    from dsstar_cli.doctor import run_checks

    try:
        config = _load_config(config_file, model=model, api_base=api_base)
    except DsstarError as exc:
        _fail(exc, False, False)
    checks = run_checks(config)
    for check in checks:
        sys.stdout.write(f"{'ok  ' if check.ok else 'FAIL'}  {check.name}: {check.detail}\n")
    raise typer.Exit(0 if all(c.ok for c in checks) else ExitCode.SETUP)


@config_app.command("show")
def config_show(
    model: Optional[str] = typer.Option(None, "--model", "-m", help="As `ask --model`."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="As `ask --api-base`."),
    config_file: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config file."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Print the effective configuration and where each value came from (secrets never shown)."""
    from dsstar_cli.doctor import credential_status, shown_value

    try:
        config = _load_config(config_file, model=model, api_base=api_base)
    except DsstarError as exc:
        _fail(exc, as_json, False)
    values = {key: {"value": shown_value(key, value), "source": config.sources[key]}
              for key, value in config.values.items()}
    credentials = credential_status(config)
    if as_json:
        _write_json({"config": values, "credentials": credentials})
        return
    width = max(len(key) for key in values)
    for key, item in values.items():
        sys.stdout.write(f"{key:<{width}}  {json.dumps(item['value'])}  ({item['source']})\n")
    for name, status in credentials.items():
        sys.stdout.write(f"credentials for {name}: {status}\n")


@config_app.command("init")
def config_init(
    path: Path = typer.Argument(Path("dsstar.yaml"), help="Where to write it."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write a commented configuration file with every key and its default."""
    if path.exists() and not force:
        _fail(UsageError(f"{path} already exists: pass --force to overwrite it"), False, False)
    path.write_text(packaged_default_text(), encoding="utf-8")
    sys.stderr.write(f"dsstar: wrote {path}; edit the keys you want to change\n")


def main() -> None:
    from dsstar_cli.secrets import protect_process

    protect_process()
    app()
