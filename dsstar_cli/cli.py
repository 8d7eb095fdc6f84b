"""The command line: parse, call the core, render. No logic of its own."""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from dsstar_cli import __version__
from dsstar_cli.config import ConfigError, load_config
from dsstar_cli.display import JsonlSink, LiveDisplay, PlainDisplay, plain_result, render_result
from dsstar_cli.errors import DsstarError, UsageError
from dsstar_cli.events import Sink, fanout
from dsstar_cli.result import EXIT_CODE_HELP, ExitCode, error_json

app = typer.Typer(
    name="dsstar",
    help="Ask a folder of data files a question; get a verified answer (the DS-STAR method).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


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
    sys.stderr.write(f"dsstar: error: {exc}\n")
    if as_json:
        sys.stdout.write(error_json(exc.kind, str(exc), exc.exit_code) + "\n")
    raise typer.Exit(exc.exit_code)


@app.command(epilog=EXIT_CODE_HELP)
def ask(
    data_dir: Path = typer.Argument(..., help="Folder of data files (read-only: it is never modified)."),
    question: str = typer.Argument(..., help="The question, in plain language."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="litellm model id, e.g. openai/gpt-4.1."),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="Base URL of an OpenAI-compatible server."),
    config_file: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config file."),
    max_rounds: Optional[int] = typer.Option(None, "--max-rounds", help="Round cap (default 10)."),
    code_timeout: Optional[float] = typer.Option(None, "--code-timeout", help="Seconds a script may run."),
    llm_timeout: Optional[float] = typer.Option(None, "--llm-timeout", help="Seconds one model call may take."),
    guidelines: Optional[str] = typer.Option(None, "--guidelines", "-g",
                                             help='Answer format, e.g. "round to 2 decimals".'),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON result object on stdout, nothing else."),
    jsonl: bool = typer.Option(False, "--jsonl", help="Print every event as a JSON line on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the answer."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress on stderr."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
) -> None:
    """Answer QUESTION from the files in DATA_DIR.

    The answer goes to stdout; progress to stderr. The run's prompts, scripts and outputs
    are kept in a run folder (see `run_dir` in configs/default.yaml).
    """
    from dsstar_cli.runner import AskRequest, ask as run_ask  # Lazy: pandas stays out of --help.

    if as_json and jsonl:
        _fail(UsageError("choose one of --json and --jsonl"), False, debug)
    console = _stderr_console()
    display = None
    try:
        config = _load_config(config_file, model=model, api_base=api_base, max_rounds=max_rounds,
                              code_timeout_s=code_timeout, **{"llm.timeout_s": llm_timeout})
        sinks: list[Sink] = []
        if jsonl:
            sinks.append(JsonlSink())
        if not (quiet or no_progress or jsonl):
            display = LiveDisplay(console) if _is_live(console) else PlainDisplay(sys.stderr)
            sinks.append(display)
        result = run_ask(AskRequest(data_dir, question, guidelines), config, fanout(*sinks))
    except DsstarError as exc:
        _close(display)
        _fail(exc, as_json, debug)
    except KeyboardInterrupt:
        _close(display)
        sys.stderr.write("dsstar: interrupted\n")
        if as_json:
            sys.stdout.write(error_json("interrupted", "interrupted by the user", ExitCode.INTERRUPTED) + "\n")
        raise typer.Exit(ExitCode.INTERRUPTED)
    _close(display)
    if as_json:
        sys.stdout.write(result.to_json() + "\n")
    elif not jsonl:
        if not quiet and not no_progress:
            (render_result(result, console) if _is_live(console) else plain_result(result, sys.stderr))
        if result.answer is not None:
            sys.stdout.write(result.answer + "\n")
        elif quiet or no_progress or not _is_live(console):
            sys.stderr.write(f"dsstar: no answer: {result.reason}\n")
    raise typer.Exit(result.exit_code())


def _close(display) -> None:
    if isinstance(display, LiveDisplay):
        display.close()


@app.command()
def describe(
    data_dir: Path = typer.Argument(..., help="Folder of data files."),
    config_file: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config file."),
    as_json: bool = typer.Option(False, "--json", help='Print {"files": [...]} as JSON.'),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
) -> None:
    """Print the description of every file in DATA_DIR, as the planner sees them (no model call)."""
    from dsstar_cli.analyzer import analyze_folder
    from dsstar_cli.analyzer.limits import AnalyzerLimits
    from dsstar_cli.runner import check_data_folder

    try:
        config = _load_config(config_file)
        folder = check_data_folder(data_dir)
    except DsstarError as exc:
        _fail(exc, as_json, debug)
    limits = AnalyzerLimits(config["analyzer.max_description_chars"], config["analyzer.sample_rows"],
                            config["analyzer.max_text_bytes"])
    mode = "builtin"  # Describing must not need a model; unknown formats get type and size.
    files = analyze_folder(folder, limits, lambda event: None, mode)
    if as_json:
        sys.stdout.write(json.dumps({"data_dir": str(folder), "files": [f.as_dict() for f in files]},
                                    ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write("\n\n".join(f.as_prompt() for f in files) + "\n")


def main() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    app()
