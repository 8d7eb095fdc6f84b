"""Event consumers that show a run: a Rich live view for terminals, plain lines otherwise, JSON lines.

All of them write progress to stderr; stdout is kept for the answer, the JSON or the JSON lines.
"""

from __future__ import annotations

import json
import sys
from typing import IO

from rich.console import Console, Group
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from dsstar_cli.events import Event
from dsstar_cli.result import RunResult

CODE_LINES = 40
OUTPUT_LINES = 20
ACTIVITY = {
    "analyzer": "writing a script to describe a file",
    "planner": "planning the next step",
    "coder": "writing the script",
    "debugger": "repairing the script",
    "verifier": "checking whether the plan answers the question",
    "router": "deciding: add a step or fix one",
    "finalizer": "formatting the final answer",
}


def _tail(text: str, lines: int) -> str:
    rows = text.rstrip().splitlines()
    return "\n".join(rows if len(rows) <= lines else [f"... ({len(rows) - lines} lines above)"] + rows[-lines:])


def _head(text: str, lines: int) -> str:
    rows = text.rstrip().splitlines()
    return "\n".join(rows if len(rows) <= lines else rows[:lines] + [f"# ... ({len(rows) - lines} more lines)"])


class LiveDisplay:
    """A terminal view: each finished step is printed as it happens, a spinner shows what is in flight."""

    def __init__(self, console: Console):
        self.console = console
        self.status = console.status("starting", spinner="dots")
        self.tokens = 0
        self.analysed = 0
        self.files = 0
        self.described: list[dict] = []
        self.progress: Progress | None = None

    def __call__(self, event: Event) -> None:
        handler = getattr(self, f"on_{event.kind}", None)
        if handler:
            handler(event.data)

    def _busy(self, text: str) -> None:
        self.status.update(Text(f"{text}  ·  {self.tokens:,} tokens", style="cyan"))
        self.status.start()

    def on_run_started(self, d: dict) -> None:
        self.console.rule(Text(d["question"], style="bold"))
        sandbox = d.get("sandbox", {}).get("level", "?")
        self.console.print(Text(f"data {d['data_dir']}  ·  model {d['models']['default']}  ·  "
                                f"up to {d['max_rounds']} rounds  ·  sandbox {sandbox}  ·  run folder {d['run_dir']}",
                                style="dim"))

    def on_analysis_started(self, d: dict) -> None:
        self.files = d["files"]
        self.status.stop()  # Rich allows one live view at a time: the bar replaces the spinner.
        self.progress = analysis_progress(self.console)
        self.task = self.progress.add_task("Analysing files", total=self.files)
        self.progress.start()

    def on_file_described(self, d: dict) -> None:
        self.analysed += 1
        self.described.append(d)
        if self.progress:
            self.progress.update(self.task, advance=1, description=f"Analysing {d['path'][-40:]}")

    def on_analysis_done(self, d: dict) -> None:
        if self.progress:
            self.progress.stop()
            self.progress = None
        self.console.print(files_table(self.described, d))

    def on_resumed(self, d: dict) -> None:
        self.console.print(Text(f"Resuming after round {d['rounds']} with the plan so far:", style="bold"))
        self.on_plan({"steps": d["steps"], "added": 0, "dropped": []})

    def on_context_shrunk(self, d: dict) -> None:
        self.console.print(Text(PlainDisplay.describe(Event("context_shrunk", d)), style="yellow"))

    def on_retrieval(self, d: dict) -> None:
        self.console.print(Text(f"Retriever ({d['method']}): {len(d['described'])} most relevant file(s) described "
                                f"in prompts, {d['listed']} more listed by path" +
                                (f" — {d['note']}" if d["note"] else ""), style="dim"))

    def on_round_started(self, d: dict) -> None:
        self.console.rule(f"Round {d['round']}/{d['max_rounds']}")

    def on_call_started(self, d: dict) -> None:
        self._busy(f"{d['role']}: {ACTIVITY.get(d['role'], 'thinking')}")

    def on_call(self, d: dict) -> None:
        self.tokens += d["input_tokens"] + d["output_tokens"]

    def on_route(self, d: dict) -> None:
        if d["action"] == "add":
            self.console.print(Text("Router: add a step", style="yellow"))
        else:
            self.console.print(Text(f"Router: step {d['step']} is wrong; dropping steps {d['step']}"
                                    f"-{d['step'] + len(d['dropped']) - 1} and re-planning", style="magenta"))

    def on_plan(self, d: dict) -> None:
        lines = Text()
        for text in d["dropped"]:
            lines.append(f"  - {text}\n", style="strike red")
        for i, step in enumerate(d["steps"], 1):
            new = i == d["added"]
            lines.append(f"{'+' if new else ' '} {i}. {step}\n", style="bold green" if new else "")
        lines.rstrip()
        self.console.print(Panel(lines, title="Plan", title_align="left", border_style="blue"))

    def on_code(self, d: dict) -> None:
        code = Syntax(_head(d["code"], CODE_LINES), "python", theme="ansi_dark", line_numbers=False)
        self.console.print(Panel(code, title=f"{d['purpose']} script · {d['script']}", title_align="left",
                                 border_style="dim"))
        self._busy(f"running {d['script']}")

    def on_execution(self, d: dict) -> None:
        ok = d["ok"]
        body = d["stdout"] if ok else (d["stdout"] + "\n" + d["stderr"]).strip()
        if d["timed_out"]:
            body += "\n[killed at the time limit]"
        if d["data_changed"]:
            body += "\n[the script changed the data folder: " + ", ".join(d["data_changed"]) + "]"
        title = f"output · {'ok' if ok else 'FAILED'} in {d['seconds']:.1f}s"
        self.console.print(Panel(Text(_tail(body, OUTPUT_LINES) or "(no output)"), title=title, title_align="left",
                                 border_style="green" if ok else "red"))

    def on_debug(self, d: dict) -> None:
        last = d["error"].strip().splitlines()[-1] if d["error"].strip() else ""
        self.console.print(Text(f"Debugger, attempt {d['attempt']}: {last}", style="yellow"))

    def on_verdict(self, d: dict) -> None:
        if d["sufficient"]:
            self.console.print(Text("Verifier: sufficient ✓", style="bold green"))
        else:
            self.console.print(Text(f"Verifier: not sufficient ({d['reason']})", style="yellow"))

    def on_finalizing(self, d: dict) -> None:
        self.console.rule("Final answer")

    def on_answer(self, d: dict) -> None:
        self.close()

    def close(self) -> None:
        if self.progress:
            self.progress.stop()
        self.status.stop()


TABLE_ROWS = 25  # Files listed in the terminal's table; the run folder has them all.


def analysis_progress(console: Console) -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=True)


def files_table(described: list[dict], done: dict) -> Table:
    cached = f", {done['cached']} from the cache" if done.get("cached") else ""
    table = Table(title=f"Data files ({done['files']}, described in {done['seconds']:.2f}s{cached})",
                  title_justify="left")
    for column in ("file", "format", "how", "note"):
        table.add_column(column)
    for f in described[:TABLE_ROWS]:
        how = f["method"] + (" (cached)" if f.get("cached") else "")
        table.add_row(f["path"], f["format"], how, Text(f["error"] or "", style="red"))
    if len(described) > TABLE_ROWS:
        table.add_row(f"... and {len(described) - TABLE_ROWS} more", "", "", "")
    return table


class PlainDisplay:
    """One plain line per event for logs and pipes: no colour, no cursor movement."""

    def __init__(self, stream: IO[str]):
        self.stream = stream

    def __call__(self, event: Event) -> None:
        line = self.describe(event)
        if line:
            self.stream.write(f"dsstar: {line}\n")
            self.stream.flush()

    @staticmethod
    def describe(event: Event) -> str | None:
        d = event.data
        match event.kind:
            case "run_started":
                sandbox = d.get("sandbox", {}).get("level", "?")
                return f"question: {d['question']} (data {d['data_dir']}, sandbox {sandbox}, run folder {d['run_dir']})"
            case "analysis_started":
                return f"analysing {d['files']} file(s)"
            case "file_described":
                return f"described {d['path']} ({d['format']}, {d['method']})" + (f": {d['error']}" if d["error"] else "")
            case "analysis_done":
                cached = f" ({d['cached']} from the cache)" if d.get("cached") else ""
                return f"analysis done in {d['seconds']:.2f}s{cached}"
            case "retrieval":
                return (f"retriever ({d['method']}): {len(d['described'])} file(s) described in prompts, "
                        f"{d['listed']} listed by path" + (f"; {d['note']}" if d["note"] else ""))
            case "round_started":
                return f"round {d['round']}/{d['max_rounds']}"
            case "route":
                return "route: add a step" if d["action"] == "add" else f"route: fix step {d['step']}"
            case "plan":
                return f"plan step {d['added']}: {d['steps'][-1]}"
            case "code":
                return f"running {d['script']}"
            case "execution":
                state = "ok" if d["ok"] else ("timed out" if d["timed_out"] else "failed")
                return f"script {state} in {d['seconds']:.1f}s"
            case "debug":
                return f"debugging, attempt {d['attempt']}"
            case "verdict":
                return "verdict: sufficient" if d["sufficient"] else f"verdict: not sufficient ({d['reason']})"
            case "finalizing":
                spent = f" ({d['budget']} budget spent)" if d.get("budget") else ""
                return f"writing the final answer{spent}"
            case "resumed":
                return f"resuming after round {d['rounds']} ({len(d['steps'])} plan step(s) kept)"
            case "context_shrunk":
                return f"{d['role']}: prompt over the context window; cut {d['chars_cut']:,} characters and asked again"
        return None


class JsonlSink:
    """`--jsonl`: every event as one JSON object per line on stdout, written directly (not via Rich)."""

    def __init__(self, stream: IO[str] | None = None):
        self.stream = stream or sys.stdout

    def __call__(self, event: Event) -> None:
        self.stream.write(json.dumps(event.as_dict(), ensure_ascii=False, default=str) + "\n")
        self.stream.flush()


def _usage_line(result: RunResult) -> str:
    total = result.usage.get("total", {})
    cost = total.get("cost_usd")
    cost_text = f"${cost:.4f}" if cost is not None else "cost unknown (unpriced model)"
    return (f"{result.rounds}/{result.max_rounds} rounds · {total.get('calls', 0)} model calls · "
            f"{total.get('input_tokens', 0):,} in / {total.get('output_tokens', 0):,} out tokens · {cost_text} · "
            f"{result.elapsed_s.get('total', 0):.1f}s")


OUTCOME_TEXT = {
    "verified": ("verified answer", "green"),
    "unverified": ("UNVERIFIED answer: round cap reached before the verifier agreed", "yellow"),
    "cost_limit": ("UNVERIFIED answer: the cost budget (--max-cost) ran out first", "yellow"),
    "time_limit": ("UNVERIFIED answer: the time budget (--timeout) ran out first", "yellow"),
    "failed": ("FAILED", "red"),
}


def render_result(result: RunResult, console: Console) -> None:
    """The closing summary on stderr (the answer itself goes to stdout separately)."""
    label, style = OUTCOME_TEXT.get(result.outcome, (result.outcome, "red"))
    body = Group(
        Text(result.answer if result.answer is not None else f"No answer: {result.reason}", style="bold"),
        Text(f"{label}" + ("" if result.outcome == "verified" else f" ({result.reason})"), style=style),
        Text(_usage_line(result), style="dim"),
        Text(f"run folder: {result.run_dir}", style="dim"),
    )
    console.print(Panel(body, title="Answer", title_align="left", border_style=style))


def plain_result(result: RunResult, stream: IO[str]) -> None:
    stream.write(f"dsstar: outcome {result.outcome}: {result.reason}\n")
    stream.write(f"dsstar: {_usage_line(result)}\n")
    stream.write(f"dsstar: run folder {result.run_dir}\n")


def bench_table(summary: list[dict]) -> Table:
    """`dsstar bench`'s summary: one row per level, then all tasks."""
    table = Table(title="dsstar bench", title_justify="left")
    for name in ("level", "tasks", "correct", "accuracy", "rounds", "calls", "input tok", "output tok",
                 "cost $", "seconds"):
        table.add_column(name, justify="left" if name == "level" else "right")
    for line in summary:
        accuracy = "-" if line["accuracy"] is None else f"{line['accuracy']:.1%}"
        cost = "unknown" if line["cost_usd"] is None else f"{line['cost_usd']:.4f}"
        table.add_row(line["level"], str(line["tasks"]), f"{line['correct']}/{line['scored']}", accuracy,
                      _num(line["mean_rounds"]), _num(line["mean_calls"]), _num(line["mean_input_tokens"], 0),
                      _num(line["mean_output_tokens"], 0), cost, _num(line["mean_seconds"]),
                      style="bold" if line["level"] == "all" else None)
    table.caption = "rounds, calls, tokens and seconds are means per task; cost is the total"
    return table


def _num(value: float | None, places: int = 1) -> str:
    return "-" if value is None else f"{value:,.{places}f}"
