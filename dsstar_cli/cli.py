"""The command line: parse, call the core, render. No logic of its own."""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Callable, Optional

import typer
from rich.console import Console

from dsstar_cli import STARTED, __version__, inline_image
from dsstar_cli.config import commented_default_text, load_config, unknown_env_warnings
from dsstar_cli.display import (JsonlSink, LiveDisplay, PlainDisplay, finish_line, not_verified_line, path_line,
                                plain_result, render_result, wants_live_view)
from dsstar_cli.errors import DsstarError, Terminated, UsageError
from dsstar_cli.events import Sink, fanout
from dsstar_cli.helptext import ClickException, Command, Group, default_group, usage_failure
from dsstar_cli.result import EXIT_CODE_HELP, ExitCode, RunResult, error_json, json_schema
from dsstar_cli.terminal import terminal_safe, visible
from dsstar_cli.textmap import map_fields

# pandas and litellm are imported inside the commands that need them, so --help stays fast.

app = typer.Typer(
    name="dsstar",
    help="Ask a folder of data files a question; get a verified answer (the DS-STAR method).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    cls=Group,
)
config_app = typer.Typer(help="Show or create the configuration (alone: `config show`).",
                         cls=default_group("show"))
app.add_typer(config_app, name="config")
runs_app = typer.Typer(help="The run history: every run of yours, wherever it was started.",
                       invoke_without_command=True, cls=Group)
app.add_typer(runs_app, name="runs")
memory_app = typer.Typer(help="The memory per data folder: answers remembered from verified runs.",
                         no_args_is_help=True, cls=Group)
app.add_typer(memory_app, name="memory")


def _version(value: bool) -> None:
    if value:
        print(f"dsstar {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                 help="Show the version."),
) -> None:
    """dsstar: a data-science agent for the command line."""


# -- options shared by several commands ----------------------------------------------------------

def _model_opt():
    return typer.Option(None, "--model", "-m", help="litellm model id, e.g. openai/gpt-4.1.")


def _api_base_opt():
    return typer.Option(None, "--api-base", help="Base URL of an OpenAI-compatible server.")


def _config_opt():
    return typer.Option(None, "--config", "-c", help="YAML config file (on top of the user and project files).")


def _json_opt(text: str = "Print one JSON object on stdout, nothing else."):
    return typer.Option(False, "--json", help=text)


def _strict_opt():
    return typer.Option(False, "--strict", help="Exit 9 when a verified answer has another plausible reading that "
                        "gives a different answer (see \"alternatives\" in --json).")


def _engine_opt():
    return typer.Option(None, "--engine", help="Where scripts' queries run: duckdb (embedded, the default) or "
                        "spark (Spark Connect at spark.remote).")


def _debug_opt():
    return typer.Option(False, "--debug", help="Show tracebacks for errors.")


def _budget_flags(max_rounds=None, code_timeout=None, llm_timeout=None, max_cost=None, timeout=None) -> dict:
    return {"max_rounds": max_rounds, "code_timeout_s": code_timeout, "llm.timeout_s": llm_timeout,
            "budget.max_cost_usd": max_cost, "budget.timeout_s": timeout}


def _cache_flag(no_cache: bool) -> dict:
    return {"analyzer.cache": False} if no_cache else {}


def _links_flag(follow_links: bool) -> dict:
    """Only when given: without the flag, the config file's `follow_links` stands."""
    return {"follow_links": True} if follow_links else {}


# -- the scaffold every command that runs shares -------------------------------------------------

def _stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def _fail(exc: DsstarError, as_json: bool, debug: bool, question: str | None = None) -> None:
    if debug:
        traceback.print_exc()
    sys.stderr.write(f"dsstar: error: {visible(str(exc))}\n")
    if as_json:
        sys.stdout.write(error_json(exc.kind, str(exc), exc.exit_code, question) + "\n")
    raise typer.Exit(exc.exit_code)


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def _write_json(obj: dict) -> None:
    """JSON goes straight to stdout, never through Rich (which would wrap lines and eat [brackets])."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=str, indent=2) + "\n")
    sys.stdout.flush()


def _display(console: Console, silent: bool, question: str | None = None):
    """The live view or plain lines; `question`, when known, is shown at once."""
    if silent:
        return None
    question = visible(question.strip()) if question and question.strip() else None
    return LiveDisplay(console, question) if wants_live_view(console) else PlainDisplay(sys.stderr, question)


def _close(display) -> None:
    if isinstance(display, LiveDisplay):
        display.close()


def _run_and_show(start: Callable[[Sink], RunResult], *, as_json: bool, jsonl: bool, silent: bool, debug: bool,
                  quiet: bool = False, question: str | None = None, before: str = "the run started",
                  strict: bool = False, report: Path | None = None) -> None:
    """One run (ask or resume): its events to the display or --jsonl, its result to stdout, its exit code,
    and `finish_line` last on stderr, but with --quiet: the answer alone (or why there is none), the
    exit code says how the run ended.
    Errors before the run starts print one line (and the error object with --json)."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    console = _stderr_console()
    display = None
    try:
        if as_json and jsonl:
            raise UsageError("choose one of --json and --jsonl")
        display = _display(console, silent or jsonl, question)
        sinks: list[Sink] = [JsonlSink()] if jsonl else []
        if display is not None:
            sinks.append(terminal_safe(display))
        result = start(fanout(*sinks))
    except DsstarError as exc:
        _close(display)
        _fail(exc, as_json, debug, question)
    except (KeyboardInterrupt, Terminated) as exc:  # Before the run started: nothing to keep.
        _close(display)
        code = ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED
        sys.stderr.write("dsstar: interrupted\n")
        if as_json:
            sys.stdout.write(error_json("interrupted", f"interrupted before {before}", code, question) + "\n")
        raise typer.Exit(code)
    _close(display)
    _print_result(result, console, as_json, jsonl, silent, strict)
    if report is not None and result.run_dir:
        _write_report(result, report, quiet)
    code = result.exit_code(strict)
    if not quiet:  # How the run ended, whatever stdout carries: --json and --no-progress too.
        if silent and not jsonl:  # A warning is not progress: said even when the display was off.
            sys.stderr.writelines(visible(f"dsstar: warning: {warning}\n") for warning in result.warnings)
        sys.stderr.write(visible(finish_line(result, int(code))))
    elif result.answer is not None and not result.verified:
        sys.stderr.write(visible(not_verified_line(result, int(code))))
    sys.stderr.flush()
    raise typer.Exit(code)


def _print_result(result: RunResult, console: Console, as_json: bool, jsonl: bool, silent: bool,
                  strict: bool = False) -> None:
    if as_json:
        _write_json(result.as_dict(strict))
        return
    if jsonl:
        return
    shown = map_fields(result, visible)
    panel = not silent and wants_live_view(console)
    if panel:
        render_result(shown, console, images=inline_image.protocol(console.file))
    elif not silent:
        plain_result(shown, sys.stderr, folder=False)
    if result.answer is not None and not (panel and _stdout_is_stderrs_terminal()):
        # Exactly as given to a pipe; made visible for a terminal; not twice on the same screen.
        sys.stdout.write((shown.answer if sys.stdout.isatty() else result.answer) + "\n")
    elif silent:  # Otherwise the summary above already gave the reason: once is enough.
        sys.stderr.write(f"dsstar: no answer: {shown.reason}\n")


def _write_report(result: RunResult, target: Path, quiet: bool) -> None:
    """`ask --report FILE`: the run's page, or one line saying why not (the run's exit code stands)."""
    from dsstar_cli import history, report

    folder = Path(result.run_dir)
    try:
        target.write_text(report.render(folder, result, history.events_of(folder)), encoding="utf-8")
    except (OSError, DsstarError) as exc:
        sys.stderr.write(f"dsstar: error: cannot write the report {visible(str(target))}: "
                         f"{visible(getattr(exc, 'strerror', None) or str(exc))}\n")
        return
    if not quiet:
        sys.stderr.write(f"dsstar: report {visible(str(target))}\n")


def _stdout_is_stderrs_terminal() -> bool:
    """stdout and stderr are the same terminal: what the live view showed there, the user has seen.
    `ask ... > answer.txt` (or `| tool`) still gets the answer on stdout."""
    try:
        return (sys.stdout.isatty() and sys.stderr.isatty()
                and os.ttyname(sys.stdout.fileno()) == os.ttyname(sys.stderr.fileno()))
    except (OSError, ValueError, AttributeError):
        return False


def _note(prefix: str, silent: bool) -> Callable[[str], None]:
    return (lambda text: None) if silent else (lambda text: sys.stderr.write(f"{prefix}: {text}\n"))


def _print_line(line: str) -> None:
    sys.stdout.write(line)
    sys.stdout.flush()


# -- commands ------------------------------------------------------------------------------------

@app.command(cls=Command, epilog=EXIT_CODE_HELP)
def ask(
    data_dir: str = typer.Argument(..., metavar="DATA_DIR",
                                   help="Folder of data files (read-only: it is never modified); with --engine "
                                   "spark, a location the cluster reads (s3a://..., hdfs://..., a shared path)."),
    question: Optional[str] = typer.Argument(None, metavar="QUESTION", help="The question, in plain language "
                                             "(`-`, or none with a pipe: read from stdin)."),
    model: Optional[str] = _model_opt(),
    api_base: Optional[str] = _api_base_opt(),
    config_file: Optional[Path] = typer.Option(None, "--config", help="YAML config file (on top of the user and "
                                               "project files)."),
    continue_: bool = typer.Option(False, "--continue", "-c", help="A follow-up: continue the last run on "
                                   "DATA_DIR (its question, plan, script and answer go into the prompts)."),
    follow: Optional[str] = typer.Option(None, "--follow", metavar="RUN", help="A follow-up of the run RUN (its "
                                         "id, a unique prefix, or its folder)."),
    fresh: bool = typer.Option(False, "--fresh", help="Ignore the folder's memory: answer afresh, remember nothing."),
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
    as_json: bool = _json_opt("Print one JSON result object on stdout, nothing else."),
    jsonl: bool = typer.Option(False, "--jsonl", help="Print every event as a JSON line on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the answer."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress on stderr."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Describe every file afresh (skip the cache)."),
    follow_links: bool = typer.Option(False, "--follow-links", help="Also read files that links in the folder "
                                      "lead to outside it (their content goes to the model)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the prompts a run sends first (stdout) and "
                                 "their tokens and cost (stderr); send nothing."),
    report: Optional[Path] = typer.Option(None, "--report", metavar="FILE.html", help="Also write the run as a "
                                          "self-contained HTML page (as `dsstar runs report`)."),
    engine: Optional[str] = _engine_opt(),
    strict: bool = _strict_opt(),
    debug: bool = _debug_opt(),
) -> None:
    """Answer QUESTION from the files in DATA_DIR (or every question in --questions FILE).

    The answer goes to stdout, progress to stderr. Each run's prompts, scripts and outputs are kept in a run folder (`dsstar runs` lists them). With --dry-run: the first prompts, unsent."""
    silent = quiet or no_progress
    try:
        question = _question_or_stdin(question, questions)
    except DsstarError as exc:
        _fail(exc, as_json, debug)

    followed = _followed(continue_, follow, as_json, debug)
    if dry_run:
        def dry(emit: Sink):
            from dsstar_cli.dryrun import batch_questions, dry_run as run_dry

            if (question is None) == (questions is None):
                raise UsageError("give either a QUESTION or --questions FILE")
            if jsonl:
                raise UsageError("--dry-run prints prompts, not events: drop --jsonl (or use --json)")
            if followed:
                raise UsageError("--dry-run does not take --continue or --follow")
            config = load_config(config_file, {"model": model, "api_base": api_base, **_cache_flag(no_cache),
                                               **_links_flag(follow_links), **_budget_flags(
                                                   max_rounds, code_timeout, llm_timeout, max_cost, timeout)})
            asked = [(None, question, guidelines)] if questions is None else batch_questions(questions, out)
            return run_dry(Path(data_dir), asked, config, emit, STARTED)

        _show_dry_run(dry, as_json=as_json, silent=silent, debug=debug, question=question)
        return

    def start(emit: Sink) -> RunResult:
        if (question is None) == (questions is None):
            raise UsageError("give either a QUESTION or --questions FILE")
        config = load_config(config_file, {"model": model, "api_base": api_base, **_cache_flag(no_cache),
                                           **_links_flag(follow_links), "engine": engine,
                                           **_budget_flags(max_rounds, code_timeout, llm_timeout, max_cost, timeout)})
        if questions is not None and report is not None:
            raise UsageError("--report writes one run's page: for a batch, use `dsstar runs report ID` per run")
        if questions is not None:
            from dsstar_cli.batch import ask_file

            if followed:
                raise UsageError("--questions does not take --continue or --follow: ask follow-ups one at a time")
            raise typer.Exit(ask_file(data_dir, questions, config, workers, out, _print_line,
                                      _note("dsstar", silent), strict, fresh))
        from dsstar_cli.runner import AskRequest, ask as run_ask

        return run_ask(AskRequest(data_dir, question, guidelines, started=STARTED, follow=followed, fresh=fresh),
                       config, emit)

    _run_and_show(start, as_json=as_json, jsonl=jsonl, silent=silent, debug=debug, quiet=quiet, question=question,
                  strict=strict, report=report)


def _followed(continue_: bool, follow: str | None, as_json: bool, debug: bool) -> str | None:
    """The run a follow-up continues, as AskRequest.follow takes it; None for a new question."""
    from dsstar_cli.followup import LAST

    if continue_ and follow is not None:
        _fail(UsageError("choose one of --continue and --follow RUN"), as_json, debug)
    return LAST if continue_ else follow


def _question_or_stdin(question: str | None, questions: Path | None) -> str | None:
    """QUESTION as given; read from stdin when it is `-`, or when it is missing with no --questions
    and stdin is not a terminal (`echo "How many rows?" | dsstar ask data`), as `llm` does."""
    piped = questions is None and sys.stdin is not None and not sys.stdin.isatty()
    if question != "-" and not (question is None and piped):
        return question
    if questions is not None:
        raise UsageError("give either a QUESTION or --questions FILE")
    try:
        text = sys.stdin.read() if sys.stdin is not None else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the question from stdin: {exc}") from exc
    if not text.strip():
        raise UsageError('the question from stdin is empty: pipe one in, e.g. echo "How many rows?" | dsstar ask '
                         "./data, or give it as QUESTION")
    return text.strip()


def _show_dry_run(build, *, as_json: bool, silent: bool, debug: bool, question: str | None) -> None:
    """`ask --dry-run`: the prompts on stdout (or one JSON object), the summary on stderr; exit 0."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    console = _stderr_console()
    progress = _DescribeProgress(console) if wants_live_view(console) and not silent else None
    try:
        dry = build(progress or (lambda event: None))
    except DsstarError as exc:
        _fail(exc, as_json, debug, question)
    except (KeyboardInterrupt, Terminated) as exc:
        code = ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED
        sys.stderr.write("dsstar: interrupted\n")
        if as_json:
            sys.stdout.write(error_json("interrupted", "interrupted during the dry run", code, question) + "\n")
        raise typer.Exit(code)
    finally:
        if progress:
            progress.close()
    from dsstar_cli.dryrun import prompts_text, summary_lines

    if as_json:
        _write_json(dry.as_dict())
        return
    text = prompts_text(dry)
    sys.stdout.write(visible(text) if sys.stdout.isatty() else text)
    sys.stdout.flush()
    if not silent:
        sys.stderr.write("".join(f"{visible(line)}\n" for line in summary_lines(dry)))


@app.command(cls=Command, epilog=EXIT_CODE_HELP)
def resume(
    run: str = typer.Argument(..., metavar="RUN", help="The run's id (see `dsstar runs`) or its folder."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Use this model from now on."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="Use this server from now on (it moved)."),
    llm_timeout: Optional[float] = typer.Option(None, "--llm-timeout",
                                                help="Wall-clock seconds each attempt of a model call may take."),
    config_file: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config file (where to look "
                                               "for run ids: its run_dir)."),
    as_json: bool = _json_opt("Print one JSON result object on stdout, nothing else."),
    jsonl: bool = typer.Option(False, "--jsonl", help="Print every event as a JSON line on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the answer."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress on stderr."),
    strict: bool = _strict_opt(),
    debug: bool = _debug_opt(),
) -> None:
    """Continue a stopped run from its last completed round, with the same question, config and files.

    API keys come from the environment, as for `ask`."""

    def start(emit: Sink) -> RunResult:
        from dsstar_cli.runner import resume as run_resume

        config = load_config(config_file)
        return run_resume(run, emit, flags={"model": model, "api_base": api_base, "llm.timeout_s": llm_timeout},
                          run_dir_setting=config["run_dir"])

    _run_and_show(start, as_json=as_json, jsonl=jsonl, silent=quiet or no_progress, debug=debug, quiet=quiet,
                  before="the run resumed", strict=strict)


@runs_app.callback()
def runs(
    ctx: typer.Context,
    limit: int = typer.Option(20, "--limit", "-n", help="Show the newest N runs (0: all)."),
    config_file: Optional[Path] = _config_opt(),
    as_json: bool = _json_opt("Print the runs as a JSON list."),
) -> None:
    """List your runs, newest first: id, outcome, rounds, cost, question (`dsstar runs show ID`).

    On a terminal a table; into a pipe one run a line, tab-separated, after a header line."""
    if ctx.invoked_subcommand is not None:
        return
    from dsstar_cli.history import list_runs

    try:
        found = list_runs(load_config(config_file)["run_dir"], limit or None)
    except DsstarError as exc:
        _fail(exc, as_json, False)
    if as_json:
        _write_json({"runs": [run.as_dict() for run in found]})
        return
    from dsstar_cli.display import runs_table, runs_tsv

    if not sys.stdout.isatty():
        sys.stdout.write(runs_tsv(found))
        return
    console = _stdout_console()
    console.print(runs_table(found, console.width))


def _stdout_console() -> Console:
    # A pipe gets tables at a readable width rather than Rich's 80-column default.
    return Console(highlight=False, width=None if sys.stdout.isatty() else 160)


@runs_app.command("show", cls=Command)
def runs_show(
    run: str = typer.Argument(..., metavar="RUN", help="The run's id (or a unique prefix) or its folder."),
    config_file: Optional[Path] = _config_opt(),
    as_json: bool = _json_opt("Print the run's summary, result and events as JSON."),
) -> None:
    """Replay a run through the same display as `ask`: its plan, scripts, outputs, verdicts and answer.

    On stdout: the live view's rendering on a terminal, plain lines into a pipe or a file."""
    from dsstar_cli import history

    from dsstar_cli.followup import chain

    try:
        run_dir_setting = load_config(config_file)["run_dir"]
        folder = history.find_run(run, run_dir_setting)
        events, result = history.events_of(folder), history.result_of(folder)
    except DsstarError as exc:
        _fail(exc, as_json, False)
    earlier = chain(result or {}, run_dir_setting)
    if as_json:
        _write_json({"run": history.summarize(folder).as_dict(), "result": result, "chain": earlier,
                     "events": [event.as_dict() for event in events]})
        return
    for link in earlier:  # The conversation this run ends, oldest first.
        sys.stdout.write(visible(f"earlier run {link['id']}: {link['question']} -> {link['answer']}") + "\n")
    console = _stdout_console()
    live = wants_live_view(console)
    display = LiveDisplay(console) if live else PlainDisplay(sys.stdout)
    for event in events:
        terminal_safe(display)(event)
    _close(display)
    if result is not None:
        shown = map_fields(RunResult.from_dict(result), visible)
        if live:
            render_result(shown, console, images=inline_image.protocol(console.file))
            console.print(path_line("run folder", shown.run_dir), crop=False)
        else:
            plain_result(shown, sys.stdout)
    else:
        sys.stderr.write(f"dsstar: this run did not finish; continue it with: dsstar resume {folder.name}\n")


@runs_app.command("report", cls=Command)
def runs_report(
    run: str = typer.Argument(..., metavar="RUN", help="The run's id (or a unique prefix) or its folder."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Where to write the page (default: "
                                       "report.html in the run folder)."),
    config_file: Optional[Path] = _config_opt(),
) -> None:
    """Write a run as one self-contained HTML page (question, answer, reading, plan, scripts and
    their output, figures embedded, model calls): it opens offline in any browser. Prints its path."""
    from dsstar_cli import history, report

    try:
        folder = history.find_run(run, load_config(config_file)["run_dir"])
        events, result = history.events_of(folder), history.result_of(folder)
        if result is None:
            raise UsageError(f"run {folder.name} did not finish: continue it with: dsstar resume {folder.name}")
        target = out or folder / "report.html"
        target.write_text(report.render(folder, RunResult.from_dict(result), events), encoding="utf-8")
    except DsstarError as exc:
        _fail(exc, False, False)
    except OSError as exc:
        _fail(UsageError(f"cannot write {target}: {exc.strerror or exc}"), False, False)
    sys.stdout.write(f"{target}\n")

RUNS_RM_EXIT_HELP = """Exit codes: 0 removed (or nothing to remove, or declined at the prompt); 1 a run was left
(in use by a running dsstar, or the system refused); 2 usage error (an unknown id, a folder outside the runs
folder, a bad duration, no --yes when stdin is not a terminal); 130 interrupted (Ctrl-C)."""


def _yes_opt():
    return typer.Option(False, "--yes", "-y", help="Remove without asking (needed when stdin is not a terminal).")


def _dry_run_opt():
    return typer.Option(False, "--dry-run", help="List what would be removed (stdout); remove nothing.")


@runs_app.command("rm", cls=Command, epilog=RUNS_RM_EXIT_HELP)
def runs_rm(
    refs: list[str] = typer.Argument(..., metavar="RUN...", help="Run ids (or unique prefixes) or run folders, as "
                                     "`runs show` takes them."),
    yes: bool = _yes_opt(),
    dry_run: bool = _dry_run_opt(),
    config_file: Optional[Path] = _config_opt(),
) -> None:
    """Remove runs: their folders (prompts, replies, scripts, outputs, artifacts) go. A run still going is left.

    Only runs that `dsstar runs` lists: a folder elsewhere is refused, whatever its content."""
    from dsstar_cli.removal import named_runs

    try:
        folders = named_runs(refs, load_config(config_file)["run_dir"])
    except DsstarError as exc:
        _fail(exc, False, False)
    _remove(folders, yes, dry_run, what="")


@runs_app.command("prune", cls=Command, epilog=RUNS_RM_EXIT_HELP)
def runs_prune(
    older_than: str = typer.Option(..., "--older-than", metavar="DURATION", help="Remove the runs last written "
                                   "more than this long ago: 30d, 12h, 90m, 2w, 1d12h."),
    yes: bool = _yes_opt(),
    dry_run: bool = _dry_run_opt(),
    config_file: Optional[Path] = _config_opt(),
) -> None:
    """Remove the runs whose journal was last written more than DURATION ago (finished or not).

    A run still going is left; so is everything that is not a run folder."""
    from dsstar_cli.removal import parse_duration, runs_older_than

    try:
        folders = runs_older_than(parse_duration(older_than), load_config(config_file)["run_dir"])
    except DsstarError as exc:
        _fail(exc, False, False)
    _remove(folders, yes, dry_run, what=f" last written more than {older_than} ago")


def _remove(folders: list[Path], yes: bool, dry_run: bool, what: str) -> None:
    """List, ask (on a terminal, without --yes), remove, and say what happened; exit as documented."""
    from dsstar_cli.removal import remove_runs

    if not folders:
        sys.stderr.write(f"dsstar: no runs{what}: nothing to remove\n")
        return
    lines = [_removal_line(folder) for folder in folders]
    count = f"{len(folders)} run{'s' if len(folders) != 1 else ''}"
    if dry_run:
        sys.stdout.write("".join(lines))
        sys.stderr.write(f"dsstar: would remove {count}{what} (--dry-run: nothing removed)\n")
        return
    if not yes:
        if not (sys.stdin.isatty() and sys.stderr.isatty()):
            _fail(UsageError(f"removing {count} needs --yes when stdin is not a terminal (--dry-run lists them)"),
                  False, False)
        sys.stderr.write("".join(lines))
        if not _confirm(f"Remove {count}{what}?"):
            sys.stderr.write("dsstar: nothing removed\n")
            return
    done = remove_runs(folders)
    for run_id in done.removed:
        sys.stdout.write(f"{run_id}\n")
    for run_id in done.in_use:
        sys.stderr.write(f"dsstar: {run_id} is in use by a running dsstar: left alone\n")
    for run_id, why in done.failed:
        sys.stderr.write(f"dsstar: cannot remove {run_id}: {visible(why)}\n")
    sys.stderr.write(f"dsstar: removed {len(done.removed)} of {count}\n")
    raise typer.Exit(1 if done.in_use or done.failed else 0)


def _confirm(question: str) -> bool:
    """Ask on the terminal (stderr, so stdout carries only what was removed); yes only when typed."""
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except KeyboardInterrupt:
        sys.stderr.write("\ndsstar: interrupted; nothing removed\n")
        raise typer.Exit(ExitCode.INTERRUPTED)
    return answer.strip().lower() in ("y", "yes")


def _removal_line(folder: Path) -> str:
    """ID, age, outcome and question, tab-separated: what a user needs to decide, one run a line."""
    import time

    from dsstar_cli.history import summarize
    from dsstar_cli.removal import last_written

    run = summarize(folder)
    question = " ".join(visible(run.question or "?").split())
    question = question if len(question) <= 60 else question[:59] + "…"
    return f"{run.id}\t{_age(time.time() - last_written(folder))}\t{run.outcome}\t{question}\n"


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


@memory_app.command("show", cls=Command)
def memory_show(
    data_dir: Path = typer.Argument(..., metavar="DATA_DIR", help="The data folder."),
    as_json: bool = _json_opt('Print {"data_dir", "memory", "entries", "functions", "conventions"} as JSON.'),
) -> None:
    """What the memory keeps for DATA_DIR: each answer, function and convention, the run it came from, whether it is stale.

    Stale: a file it read changed since. A stale answer is re-checked by the next ask of its question (its
    script re-runs, the verifier judges); a stale function is re-checked before a run is offered it (its
    script re-runs); a stale convention is not offered."""
    from dsstar_cli.memory import MemoryUnavailable, inventory

    try:
        shown = inventory.show(data_dir.resolve())
    except MemoryUnavailable as exc:
        _fail(DsstarError(str(exc)), as_json, False)
    if as_json:
        _write_json(shown)
    else:
        sys.stdout.write(visible(inventory.text(shown)) if sys.stdout.isatty() else inventory.text(shown))


@memory_app.command("clear", cls=Command)
def memory_clear(
    data_dir: Path = typer.Argument(..., metavar="DATA_DIR", help="The data folder."),
    as_json: bool = _json_opt('Print {"data_dir", "memory", "cleared": N} as JSON.'),
) -> None:
    """Forget every answer, function and convention remembered for DATA_DIR (the runs stay in the history)."""
    from dsstar_cli.memory import MemoryUnavailable, inventory

    try:
        cleared = inventory.clear(data_dir.resolve())
    except MemoryUnavailable as exc:
        _fail(DsstarError(str(exc)), as_json, False)
    if as_json:
        _write_json(cleared)
    else:
        sys.stderr.write(f"dsstar: forgot {cleared['cleared']} item(s) remembered for {visible(cleared['data_dir'])}\n")


LEARN_EXIT_HELP = """Exit codes: 0 every question got a verified answer (kept in the memory or not);
otherwise the most serious outcome among the questions, as `ask` exits for one: 10 the data cannot answer
a question; 3 an unverified answer; 7 cost budget (--max-cost) reached; 8 time budget (--timeout) reached;
1 a run failed; 4 configuration, model or credentials error; 5 model unreachable. Before any question:
2 usage error (FILE missing, empty or malformed); 6 bad data folder (missing, not a folder, no usable data).
130 interrupted (Ctrl-C); 143 terminated (SIGTERM): the report covers the questions answered by then."""


@app.command(cls=Command, epilog=LEARN_EXIT_HELP)
def learn(
    data_dir: Path = typer.Argument(..., metavar="DATA_DIR", help="Folder of data files (read-only: it is never "
                                    "modified)."),
    questions: Path = typer.Option(..., "--questions", help="A JSONL (id, question, guidelines) or text file (one "
                                   "question a line), as `ask --questions` takes."),
    model: Optional[str] = _model_opt(),
    api_base: Optional[str] = _api_base_opt(),
    config_file: Optional[Path] = _config_opt(),
    workers: int = typer.Option(1, "--workers", "-w", help="Questions answered in parallel."),
    max_rounds: Optional[int] = typer.Option(None, "--max-rounds", help="Round cap per question (default 10)."),
    code_timeout: Optional[float] = typer.Option(None, "--code-timeout", help="Seconds a script may run."),
    llm_timeout: Optional[float] = typer.Option(None, "--llm-timeout",
                                                help="Wall-clock seconds each attempt of a model call may take."),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="Dollar budget per question."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Seconds each question may take."),
    as_json: bool = _json_opt('Print {"data_dir", "questions": [...], "totals", "memory", "exit_code"} as JSON.'),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress on stderr."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Describe every file afresh (skip the cache)."),
    follow_links: bool = typer.Option(False, "--follow-links", help="Also read files that links in the folder "
                                      "lead to outside it (their content goes to the model)."),
    debug: bool = _debug_opt(),
) -> None:
    """Build DATA_DIR's memory: answer every question in --questions FILE (in parallel, as `ask --questions`), then report per question whether its answer was kept (and if not, why) and what the memory holds.

    Asked again later, a kept question is answered from the memory at once, with no model call (`dsstar memory show DATA_DIR` lists them). The report goes to stdout, progress to stderr."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    from dsstar_cli.learn import learn as run_learn, text

    try:
        config = load_config(config_file, {"model": model, "api_base": api_base, **_cache_flag(no_cache),
                                           **_links_flag(follow_links),
                                           **_budget_flags(max_rounds, code_timeout, llm_timeout, max_cost, timeout)})
        lesson = run_learn(data_dir, questions, config, workers, _note("dsstar learn", no_progress))
    except DsstarError as exc:
        _fail(exc, as_json, debug)
    except (KeyboardInterrupt, Terminated) as exc:  # Before the batch started, or after it (the report).
        sys.stderr.write("dsstar: interrupted\n")
        raise typer.Exit(ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED)
    if as_json:
        _write_json(lesson.as_dict())
    else:
        report = text(lesson)
        sys.stdout.write(visible(report) if sys.stdout.isatty() else report)
    raise typer.Exit(lesson.exit_code)


@app.command(cls=Command)
def bench(
    tasks_file: Path = typer.Argument(..., metavar="TASKS_FILE", help="DABStep-format JSONL (task_id, question, "
                                      "guidelines, level, answer) or a KramaBench workload.json."),
    data_dir: Optional[Path] = typer.Option(None, "--data", "-d", help="Folder of the benchmark's data files "
                                            "(default for KramaBench: input/ beside workload.json)."),
    model: Optional[str] = _model_opt(),
    api_base: Optional[str] = _api_base_opt(),
    config_file: Optional[Path] = _config_opt(),
    max_rounds: Optional[int] = typer.Option(None, "--max-rounds", help="Round cap per task (default 10)."),
    code_timeout: Optional[float] = typer.Option(None, "--code-timeout", help="Seconds a script may run."),
    llm_timeout: Optional[float] = typer.Option(None, "--llm-timeout",
                                                help="Wall-clock seconds each attempt of a model call may take."),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="Dollar budget per task."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Seconds each task may take."),
    workers: int = typer.Option(1, "--workers", "-w", help="Tasks answered in parallel."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write one scored JSON row per task here."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out: skip finished tasks."),
    submission: Optional[Path] = typer.Option(None, "--submission", help="Also write DABStep's submission file "
                                              "(task_id, agent_answer, reasoning_trace)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Only the first N (selected) tasks."),
    level: Optional[str] = typer.Option(None, "--level", help="Only tasks of this level: easy, medium or hard."),
    memory: bool = typer.Option(False, "--memory", help="Use and fill the folder's memory, as `ask` does (with "
                                "--workers 1 the tasks run in order: what the memory saves over a series). "
                                "Default: every task afresh."),
    as_json: bool = _json_opt("Print the summary as JSON instead of a table."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Describe every file afresh (skip the cache)."),
    follow_links: bool = typer.Option(False, "--follow-links", help="Also read files that links in the folder "
                                      "lead to outside it (their content goes to the model)."),
    debug: bool = _debug_opt(),
) -> None:
    """Answer a benchmark's tasks with the same pipeline as `ask`, score them with the benchmark's own
    rules, and print accuracy, rounds, calls, tokens, cost and time per level."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    from dsstar_cli.bench import harness, tasks as bench_tasks

    note = _note("dsstar bench", False)
    try:
        if resume and out is None:
            raise UsageError("--resume needs --out: the results file to continue")
        config = load_config(config_file, {"model": model, "api_base": api_base, **_cache_flag(no_cache),
                                           **_links_flag(follow_links),
                                           **_budget_flags(max_rounds, code_timeout, llm_timeout, max_cost, timeout)})
        selected = bench_tasks.select(bench_tasks.read_tasks(tasks_file), level, limit)
        folder = data_dir or bench_tasks.default_data_dir(tasks_file)
        if folder is None:
            raise UsageError("give the benchmark's data folder with --data DIR")
        plan = harness.plan_run(selected, out, resume)
        note(f"{len(selected)} task(s), {len(plan.kept)} already done, {len(plan.todo)} to run with "
             f"{workers} worker(s)")
        rows = list(plan.kept) + harness.run_to_file(folder, plan.todo, config, workers, out, note,
                                                              memory=memory)
    except DsstarError as exc:
        _fail(exc, as_json, debug)
    except (KeyboardInterrupt, Terminated) as exc:
        note(f"interrupted; rerun with --out {out} --resume to run the rest" if out else "interrupted; rerun "
             "to run them again")
        raise typer.Exit(ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED)
    if submission is not None:
        harness.write_submission(submission, rows)
    summary = harness.summarize(rows)
    if as_json:
        _write_json({"summary": summary, "out": str(out) if out else None, "tasks": len(rows)})
    else:
        from dsstar_cli.display import bench_table

        Console(highlight=False, width=None if sys.stdout.isatty() else 120).print(bench_table(summary))
    raise typer.Exit(harness.bench_exit_code(rows))


@app.command(cls=Command)
def describe(
    data_dir: Path = typer.Argument(..., metavar="DATA_DIR", help="Folder of data files."),
    config_file: Optional[Path] = _config_opt(),
    as_json: bool = _json_opt('Print {"files": [...]} as JSON.'),
    no_cache: bool = typer.Option(False, "--no-cache", help="Describe every file afresh (skip the cache)."),
    follow_links: bool = typer.Option(False, "--follow-links", help="Also read files that links in the folder "
                                      "lead to outside it (their content goes to the model)."),
    debug: bool = _debug_opt(),
) -> None:
    """Print the description of every file in DATA_DIR, as the planner sees them (no model call)."""
    from dsstar_cli.analyzer import analyze_folder
    from dsstar_cli.runner import analyzer_limits, check_data_folder, description_cache

    try:
        config = load_config(config_file, {**_cache_flag(no_cache), **_links_flag(follow_links)})
        folder = check_data_folder(data_dir)
    except DsstarError as exc:
        _fail(exc, as_json, debug)
    console = _stderr_console()
    progress = _DescribeProgress(console) if wants_live_view(console) else None  # Counts only: no file text shown.
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
        # Text for people, wherever it goes (`| less -R` is a terminal too): only --json keeps exact bytes.
        sys.stdout.write(visible("\n\n".join(f.as_prompt() for f in files) + "\n"))


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


@app.command(cls=Command)
def schema() -> None:
    """Print the JSON Schema of what `--json` prints: a run's result, the error of a run that could not start, or a dry run."""
    _write_json(json_schema())


@app.command(cls=Command)
def doctor(
    model: Optional[str] = typer.Option(None, "--model", "-m", help="litellm model id to check."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="OpenAI-compatible server to check."),
    config_file: Optional[Path] = _config_opt(),
    engine: Optional[str] = _engine_opt(),
    as_json: bool = _json_opt('Print {"ok": ..., "checks": [{"name", "ok", "detail"}]} as JSON.'),
) -> None:
    """Check the model, its credentials, the server, the sandbox, the query engine and the run folder; say what to fix."""
    from dsstar_cli.doctor import run_checks

    try:
        config = load_config(config_file, {"model": model, "api_base": api_base, "engine": engine})
    except DsstarError as exc:
        _fail(exc, as_json, False)
    checks = run_checks(config)
    ok = all(c.ok for c in checks)
    if as_json:
        _write_json({"ok": ok, "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in checks]})
    else:
        for check in checks:
            sys.stdout.write(f"{'ok  ' if check.ok else 'FAIL'}  {check.name}: {check.detail}\n")
    raise typer.Exit(0 if ok else ExitCode.SETUP)


@config_app.command("show", cls=Command)
def config_show(
    model: Optional[str] = typer.Option(None, "--model", "-m", help="As `ask --model`."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="As `ask --api-base`."),
    config_file: Optional[Path] = _config_opt(),
    as_json: bool = _json_opt("Print as JSON."),
) -> None:
    """Print the effective configuration, where each value came from (flag, env, which file, default), for
    each model the endpoint and credential variable in use (secrets never shown), and the files read.

    The project file is ./dsstar.yaml, else the nearest dsstar.yaml above (up to the home folder)."""
    from dsstar_cli.doctor import credential_status, shown_value

    try:
        config = load_config(config_file, {"model": model, "api_base": api_base})
    except DsstarError as exc:
        _fail(exc, as_json, False)
    values = {key: {"value": shown_value(key, value), "source": config.sources[key]}
              for key, value in config.values.items()}
    credentials = credential_status(config)
    files = [{"path": path, "layer": layer} for path, layer in config.files]
    if as_json:
        _write_json({"config": values, "credentials": credentials, "files": files})
        return
    width = max(len(key) for key in values)
    for key, item in values.items():
        sys.stdout.write(f"{key:<{width}}  {json.dumps(item['value'])}  ({item['source']})\n")
    for name, status in credentials.items():
        sys.stdout.write(f"model {name}: endpoint {status['endpoint']} ({status['endpoint_source']}); "
                         f"credentials {status['credentials']}\n")
    read = ", ".join(f"{visible(f['path'])} ({f['layer']})" for f in files)
    sys.stdout.write(f"config files: {read or 'none (the defaults, the environment and flags only)'}\n")


@config_app.command("init", cls=Command)
def config_init(
    path: Path = typer.Argument(Path("dsstar.yaml"), metavar="PATH", help="Where to write it."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write a configuration file with every key and its default, commented out: uncomment what you change."""
    if path.exists() and not force:
        _fail(UsageError(f"{path} already exists: pass --force to overwrite it"), False, False)
    path.write_text(commented_default_text(), encoding="utf-8")
    sys.stderr.write(f"dsstar: wrote {path}; uncomment the keys you want to change\n")


def main() -> None:
    from dsstar_cli.secrets import protect_process

    protect_process()
    for line in unknown_env_warnings(os.environ):
        sys.stderr.write(line + "\n")
    try:
        code = app(standalone_mode=False)
    except ClickException as exc:  # Bad arguments: one line (and the error object with --json).
        code = usage_failure(exc, sys.argv[1:])
    except typer.Abort:  # Ctrl-C while click itself was reading the arguments.
        code = ExitCode.INTERRUPTED
    exit_now(code or 0)


def exit_now(code: int) -> None:
    """Exit without tearing the interpreter down once litellm is loaded (freeing its thousands of
    modules and objects took 1.5 s on this project's 2-core machine, after all the work was done),
    or while a thread still works (the model check, stopped by Ctrl-C mid-import: shutdown would
    wait for it). Everything the run wrote is closed by then; atexit handlers still run and streams
    are flushed."""
    import threading

    if "litellm" not in sys.modules and threading.active_count() == 1:
        sys.exit(code)
    import atexit
    import os

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # A closed pipe (`dsstar ... | head`): nothing more to say.
            pass
    os._exit(code)
