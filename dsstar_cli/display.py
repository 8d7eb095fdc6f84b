"""Event consumers that show a run: a Rich live view for terminals, plain lines otherwise, JSON lines.

One mapping, `VIEWS`, says how each event kind is shown; the live view and the plain lines both use
it, so every kind of `events.KINDS` has exactly one entry (a test checks), and a kind missing here
or misspelt there fails a test instead of vanishing. All of them write progress to stderr; stdout
is kept for the answer, the JSON or the JSON lines.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import IO, Callable

from rich import box
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from dsstar_cli import inline_image
from dsstar_cli.artifacts import FIGURE
from dsstar_cli.events import Event
from dsstar_cli.result import RunResult
from dsstar_cli.terminal import quiet_ctrl_c, visible

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


def wants_live_view(console: Console, env: dict | None = None) -> bool:
    """The live view only on a real terminal, not with TERM=dumb (FORCE_COLOR forces it). NO_COLOR
    drops colour only: the Console honours it, and the layout, scripts and outputs stay."""
    env = os.environ if env is None else env
    if env.get("FORCE_COLOR"):
        return True
    return console.is_terminal and not console.is_dumb_terminal


def _tail(text: str, lines: int) -> str:
    rows = text.rstrip().splitlines()
    return "\n".join(rows if len(rows) <= lines else [f"... ({len(rows) - lines} lines above)"] + rows[-lines:])


def _head(text: str, lines: int) -> str:
    rows = text.rstrip().splitlines()
    return "\n".join(rows if len(rows) <= lines else rows[:lines] + [f"# ... ({len(rows) - lines} more lines)"])


@dataclass
class RunView:
    """What a display remembers across events: running totals, the clock, the last error shown."""

    started: float | None = None
    tokens: int = 0
    cost_usd: float | None = 0.0   # None once a call had no price: then tokens are shown instead.
    calls: int = 0
    described: list[dict] = field(default_factory=list)
    errors_shown: set[str] = field(default_factory=set)  # Tracebacks shown whole, as `same_error` keys them.
    question: str | None = None    # Shown as soon as the command line was read, before any event.

    def spent(self, now: float) -> str:
        """`$0.0123 · 12s` (or `1,234 tokens · 12s` for an unpriced model)."""
        money = f"${self.cost_usd:.4f}" if self.cost_usd is not None and self.calls else f"{self.tokens:,} tokens"
        elapsed = f"{now - self.started:.0f}s" if self.started is not None else ""
        return " · ".join(part for part in (money, elapsed) if part)


@dataclass
class Shown:
    """How one event is shown. `line`: the plain line (None: nothing). The live view prints `live`
    when given, else `line` in `style` (as a rule when `rule`), then shows `busy` on the spinner."""

    line: str | None = None
    live: RenderableType | None = None
    style: str = ""
    rule: bool = False
    busy: str | None = None


View = Callable[[dict, RunView, float], Shown]


def _run_started(d: dict, view: RunView, now: float) -> Shown:
    view.started = now
    sandbox = d.get("sandbox", {}).get("level", "?")
    asked = "run:" if view.question == d["question"] else f"question: {d['question']}"
    return Shown(f"{asked} (data {d['data_dir']}, sandbox {sandbox}, run folder {d['run_dir']})",
                 live=Group(path_line("data", d["data_dir"]),
                            Text(f"model {d['models']['default']}  ·  up to {d['max_rounds']} rounds  ·  "
                                 f"sandbox {sandbox}", style="dim"),
                            path_line("run folder", d["run_dir"])))


def path_line(label: str, path: str) -> Text:
    """`label path` on a line of its own that Rich never breaks: a path longer than the terminal is
    wrapped by the terminal itself, so it is still copied whole (a fold would insert newlines)."""
    return Text(f"{label} {path}", style="dim", no_wrap=True, overflow="ignore")


def _resumed(d: dict, view: RunView, now: float) -> Shown:
    return Shown(f"resuming after round {d['rounds']} ({len(d['steps'])} plan step(s) kept)",
                 live=Group(Text(f"Resuming after round {d['rounds']} with the plan so far:", style="bold"),
                            plan_panel(d["steps"], 0, [])))


def _analysis_started(d: dict, view: RunView, now: float) -> Shown:
    return Shown(f"analysing {d['files']} file(s)")  # The live view shows a progress bar instead.


def _file_described(d: dict, view: RunView, now: float) -> Shown:
    view.described.append(d)
    error = d.get("error")
    return Shown(f"described {d['path']} ({d.get('format')}, {d.get('method')})" + (f": {error}" if error else ""))


def _analysis_done(d: dict, view: RunView, now: float) -> Shown:
    cached = f" ({d['cached']} from the cache)" if d.get("cached") else ""
    return Shown(f"analysis done in {d['seconds']:.2f}s{cached}", live=files_table(view.described, d))


def _retrieval(d: dict, view: RunView, now: float) -> Shown:
    note = d.get("note")
    return Shown(f"retriever ({d['method']}): {len(d['described'])} file(s) described in prompts, "
                 f"{d['listed']} listed by path" + (f"; {note}" if note else ""), style="dim")


def _round_started(d: dict, view: RunView, now: float) -> Shown:
    return Shown(f"round {d['round']}/{d['max_rounds']}", live=Text(f"Round {d['round']}/{d['max_rounds']}"),
                 rule=True)


def _route(d: dict, view: RunView, now: float) -> Shown:
    if d["action"] == "add":
        return Shown("route: add a step", live=Text("Router: add a step", style="yellow"))
    last = d["step"] + len(d["dropped"]) - 1
    return Shown(f"route: fix step {d['step']}", live=Text(
        f"Router: step {d['step']} is wrong; dropping steps {d['step']}-{last} and re-planning", style="magenta"))


def plan_panel(steps: list[str], added: int, dropped: list[str]) -> Panel:
    lines = Text()
    for text in dropped:
        lines.append(f"  - {text}\n", style="strike red")
    for i, step in enumerate(steps, 1):
        new = i == added
        lines.append(f"{'+' if new else ' '} {i}. {step}\n", style="bold green" if new else "")
    lines.rstrip()
    return Panel(lines, title="Plan", title_align="left", border_style="blue")


def _plan(d: dict, view: RunView, now: float) -> Shown:
    return Shown(f"plan step {d['added']}: {d['steps'][-1]}", live=plan_panel(d["steps"], d["added"], d["dropped"]))


def _code(d: dict, view: RunView, now: float) -> Shown:
    from rich.syntax import Syntax  # Imports pygments (~20 ms): when the first script is shown, not at start.

    # Long lines wrap rather than being cut at the terminal's edge without a mark.
    code = Syntax(_head(d["code"], CODE_LINES), "python", theme="ansi_dark", line_numbers=False, word_wrap=True)
    return Shown(f"running {d['script']}", live=Panel(code, title=f"{d['purpose']} script · {d['script']}",
                                                      title_align="left", border_style="dim"),
                 busy=f"running {d['script']}")


def _execution(d: dict, view: RunView, now: float) -> Shown:
    ok = d["ok"]
    state = "ok" if ok else ("timed out" if d["timed_out"] else "failed")
    line = f"script {state} in {d['seconds']:.1f}s"
    if ok:
        body = d["stdout"]
    else:
        # The traceback as the debugger sees it (the script's own frames), once: a repeat is one line.
        error = d.get("error") or d["stderr"]
        printed = _tail(d["stdout"], OUTPUT_LINES // 2) if d["stdout"].strip() else ""
        last = (error.strip().splitlines() or [""])[-1]
        repeat = same_error(error) in view.errors_shown
        view.errors_shown.add(same_error(error))
        shown_error = f"the same error again: {last}" if repeat else error
        body = (printed + "\n" + shown_error).strip()
        line += ": " + (shown_error if repeat else last)
    if d["timed_out"]:
        body += "\n[killed at the time limit]"
    if d.get("data_changed"):
        body += "\n[the script changed the data folder: " + ", ".join(d["data_changed"]) + "]"
    title = f"output · {'ok' if ok else 'FAILED'} in {d['seconds']:.1f}s"
    return Shown(line, live=Panel(Text(_tail(body, OUTPUT_LINES) or "(no output)"), title=title, title_align="left",
                                  border_style="green" if ok else "red"))


# A script's own name in its traceback: each attempt's differs (001-round01-solution.py, 002-...-debug1.py).
_SCRIPT_NAME = re.compile(r'File "[^"\n]*\d{3}-round\d{2}-[^"\n]*\.py"')


def same_error(error: str) -> str:
    """What two tracebacks share when they are the same error: all but the failing script's name."""
    return _SCRIPT_NAME.sub('File "<script>"', error.strip())


def _debug(d: dict, view: RunView, now: float) -> Shown:
    last = d["error"].strip().splitlines()[-1] if d["error"].strip() else ""
    return Shown(f"debugging, attempt {d['attempt']}",
                 live=Text(f"Debugger, attempt {d['attempt']}: {last}", style="yellow"))


def _verdict(d: dict, view: RunView, now: float) -> Shown:
    reason = d.get("reason") or ""
    if d["sufficient"]:
        return Shown("verdict: sufficient", live=Text("Verifier: sufficient ✓", style="bold green"))
    return Shown(f"verdict: not sufficient: {reason}", live=Text(f"Verifier: not sufficient — {reason}",
                                                                style="yellow"))


def _call_started(d: dict, view: RunView, now: float) -> Shown:
    return Shown(busy=f"{d['role']}: {ACTIVITY.get(d['role'], 'thinking')}")


def _call(d: dict, view: RunView, now: float) -> Shown:
    view.calls += 1
    view.tokens += d["input_tokens"] + d["output_tokens"]
    cost = d.get("cost_usd")
    view.cost_usd = None if view.cost_usd is None or cost is None else view.cost_usd + cost
    return Shown()


def _warning(d: dict, view: RunView, now: float) -> Shown:
    return Shown(f"warning: {d['message']}", style="yellow")


def _retry(d: dict, view: RunView, now: float) -> Shown:
    """A failed model attempt as it happens, in yellow; the live view's status line then counts down
    the wait (see _StatusLine), so a silent server never looks like a model thinking."""
    wait = d.get("wait_s")
    then = "giving up" if wait is None else ("retrying now" if wait < 0.05 else f"retrying in {wait:.1f} s")
    return Shown(f"{d['role']}: {d['error']} (attempt {d['attempt']} of {d['attempts']}); {then}", style="yellow")


def _context_shrunk(d: dict, view: RunView, now: float) -> Shown:
    return Shown(f"{d['role']}: prompt over the context window; cut {d['chars_cut']:,} characters and asked again",
                 style="yellow")


def _finalizing(d: dict, view: RunView, now: float) -> Shown:
    spent = f" ({d['budget']} budget spent)" if d.get("budget") else ""
    return Shown(f"writing the final answer{spent}", live=Text("Final answer"), rule=True)


def _answered_from_output(d: dict, view: RunView, now: float) -> Shown:
    source = "the verified output" if d.get("verified") else "the last script's output"
    return Shown(f"answered from {source}, no script run", style="green" if d.get("verified") else "yellow")


def _following(d: dict, view: RunView, now: float) -> Shown:
    answer = d.get("answer")
    return Shown(f"follows run {d['run']}: {d['question']} (answer: {answer if answer is not None else 'none'})",
                 style="dim")


def _from_memory(d: dict, view: RunView, now: float) -> Shown:
    return Shown(f"answered from memory: verified by run {d['run']} at {d['at']}; the files it read are unchanged, "
                 "so no model was called", style="green")


def _memory_recheck(d: dict, view: RunView, now: float) -> Shown:
    return Shown(f"remembered from run {d['run']} at {d['at']}, but {', '.join(d['changed'])} changed: its verified "
                 "script runs again and the verifier alone judges it", style="yellow")


def _memory_rejected(d: dict, view: RunView, now: float) -> Shown:
    return Shown(f"the remembered answer did not hold ({d['reason']}): answering afresh", style="yellow")


def _memory_offered(d: dict, view: RunView, now: float) -> Shown:
    kept = [f"{len(d['functions'])} function(s)", f"{d['conventions']} convention(s)", f"{d['answers']} answer(s)"]
    forgotten = f"; forgot {', '.join(d['forgotten'])} (failed on the changed files)" if d.get("forgotten") else ""
    return Shown(f"memory of this folder offered: {', '.join(kept)} from earlier verified runs{forgotten}", style="dim")


def _shortcut(d: dict, view: RunView, now: float) -> Shown:
    return Shown("the folder's memory covers this question: one script with its functions, then the verifier",
                 style="dim")


def _shortcut_handed_on(d: dict, view: RunView, now: float) -> Shown:
    return Shown(f"the short round gave no verified answer ({d['reason']}): the loop goes on from it", style="yellow")


def _answer(d: dict, view: RunView, now: float) -> Shown:
    return Shown()  # The result's summary follows (render_result / plain_result).


VIEWS: dict[str, View] = {
    "run_started": _run_started,
    "warning": _warning,
    "resumed": _resumed,
    "analysis_started": _analysis_started,
    "file_described": _file_described,
    "analysis_done": _analysis_done,
    "retrieval": _retrieval,
    "round_started": _round_started,
    "route": _route,
    "plan": _plan,
    "code": _code,
    "execution": _execution,
    "debug": _debug,
    "verdict": _verdict,
    "call_started": _call_started,
    "call": _call,
    "retry": _retry,
    "context_shrunk": _context_shrunk,
    "finalizing": _finalizing,
    "answered_from_output": _answered_from_output,
    "following": _following,
    "from_memory": _from_memory,
    "memory_recheck": _memory_recheck,
    "memory_rejected": _memory_rejected,
    "memory_offered": _memory_offered,
    "shortcut": _shortcut,
    "shortcut_handed_on": _shortcut_handed_on,
    "answer": _answer,
}


class LiveDisplay:
    """A terminal view: each finished step is printed as it happens; a spinner line shows what is in
    flight, with the running cost (or tokens, for an unpriced model) and the elapsed time."""

    def __init__(self, console: Console, question: str | None = None):
        """`question` (made visible by the caller) is shown at once: the first line comes before
        anything slow (see model_check.py)."""
        self.console = console
        self.restore_echo = quiet_ctrl_c(console.file)  # A `^C` would land inside the live region.
        self.status = console.status("starting", spinner="dots")
        self.view = RunView(question=question)
        self.progress: Progress | None = None
        self.busy = ""
        if question is not None:
            self.console.rule(Text(question, style="bold"))

    def __call__(self, event: Event) -> None:
        shown = VIEWS[event.kind](event.data, self.view, event.time)
        if event.kind == "run_started" and self.view.question != event.data["question"]:
            self.console.rule(Text(event.data["question"], style="bold"))
        if event.kind == "analysis_started":
            self.status.stop()  # Rich allows one live view at a time: the bar replaces the spinner.
            self.progress = analysis_progress(self.console)
            self.task = self.progress.add_task("Analysing files", total=event.data["files"])
            self.progress.start()
            return
        if event.kind == "file_described":
            if self.progress:
                self.progress.update(self.task, advance=1, description=f"Analysing {event.data['path'][-40:]}")
            return
        if event.kind == "analysis_done" and self.progress:
            self.progress.stop()
            self.progress = None
        if event.kind == "answer":
            self.close()
            return
        if shown.rule:
            self.console.rule(shown.live if shown.live is not None else shown.line)
        elif shown.live is not None:
            self.console.print(shown.live, crop=False)  # A `path_line` is left for the terminal to wrap.
        elif shown.line:
            self.console.print(Text(shown.line, style=shown.style))
        if shown.busy:
            self.busy = shown.busy
        if self.busy and event.kind in ("call_started", "call", "code", "retry"):
            retry = event.data if event.kind == "retry" else None
            self.status.update(_StatusLine(self.busy, self.view, retry, event.time))
            self.status.start()

    def close(self) -> None:
        if self.progress:
            self.progress.stop()
        self.status.stop()
        self.restore_echo()


class _StatusLine:
    """The spinner's text, rendered afresh at every refresh, so the elapsed time keeps counting.
    After a `retry` event (at `since`) it counts down the wait, then names the attempt under way."""

    def __init__(self, busy: str, view: RunView, retry: dict | None = None, since: float = 0.0):
        self.busy, self.view, self.retry, self.since = busy, view, retry, since

    def __rich__(self) -> Text:
        now = time.time()
        busy, retry = self.busy, self.retry
        if retry is not None and retry.get("wait_s") is None:
            busy = f"{retry['role']}: giving up ({retry['error']})"
        elif retry is not None:
            left = self.since + retry["wait_s"] - now
            busy = (f"{retry['role']}: waiting {math.ceil(left)}s to retry ({retry['error']})" if left > 0
                    else f"{busy} (attempt {retry['attempt'] + 1} of {retry['attempts']})")
        return Text(f"{busy}  ·  {self.view.spent(now)}", style="cyan" if retry is None else "yellow")


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

    def __init__(self, stream: IO[str], question: str | None = None):
        self.stream = stream
        self.view = RunView(question=question)
        if question is not None:
            self.stream.write(f"dsstar: question: {question}\n")
            self.stream.flush()

    def __call__(self, event: Event) -> None:
        line = VIEWS[event.kind](event.data, self.view, event.time).line
        if line:
            self.stream.write(f"dsstar: {line}\n")
            self.stream.flush()


class JsonlSink:
    """`--jsonl`: every event as one JSON object per line on stdout, written directly (not via Rich)."""

    def __init__(self, stream: IO[str] | None = None):
        self.stream = stream or sys.stdout

    def __call__(self, event: Event) -> None:
        self.stream.write(json.dumps(event.as_dict(), ensure_ascii=False, default=str) + "\n")
        self.stream.flush()


def cost_text(total: dict) -> str:
    """What the model calls cost: dollars, "cost unknown" for an unpriced model, or nothing spent."""
    if not total.get("calls"):
        return "no model call completed"
    cost = total.get("cost_usd")
    return f"${cost:.4f}" if cost is not None else "cost unknown (unpriced model)"


def _usage_line(result: RunResult) -> str:
    total = result.usage.get("total", {})
    return (f"{result.rounds}/{result.max_rounds} rounds · {total.get('calls', 0)} model calls · "
            f"{total.get('input_tokens', 0):,} in / {total.get('output_tokens', 0):,} out tokens · "
            f"{cost_text(total)} · {result.elapsed_s.get('total', 0):.1f}s")


OUTCOME_TEXT = {
    "verified": ("verified answer", "green"),
    "unanswerable": ("verified: the data cannot answer this question", "yellow"),
    "unverified": ("UNVERIFIED answer: round cap reached before the verifier agreed", "yellow"),
    "cost_limit": ("UNVERIFIED answer: the cost budget (--max-cost) ran out first", "yellow"),
    "time_limit": ("UNVERIFIED answer: the time budget (--timeout) ran out first", "yellow"),
    "failed": ("FAILED", "red"),
    "interrupted": ("INTERRUPTED", "red"),
}


def _status(result: RunResult) -> tuple[str, str]:
    """The outcome line: a verified answer that another reading would change says so, in yellow."""
    label, style = OUTCOME_TEXT.get(result.outcome, (result.outcome, "red"))
    if result.answer is not None and result.outcome not in ("verified", "unanswerable"):
        label += f" ({result.reason})"
    if result.ambiguous:
        others = len(result.alternatives)
        label += f"; {others} other reading{'s' if others > 1 else ''} of the question give{'' if others > 1 else 's'} " \
                 "a different answer (below)"
        style = "yellow"
    return label, style


def reading_lines(result: RunResult) -> list[str]:
    """What the answer rests on, one line each: the choices it depends on, then the other readings."""
    return ([f"assumed: {text}" for text in result.assumptions]
            + [f"other reading: {alt['reading']} => {alt['answer']}" for alt in result.alternatives])


ANSWER_ROWS = 30  # Rows of a table answer shown in the panel; answer.csv and --json have them all.
NUMBER = re.compile(r"^[-+]?[\d,]*\.?\d+(e[-+]?\d+)?%?$", re.IGNORECASE)


def answer_table(table: dict) -> Table:
    """A table answer as a table: its header bold, numeric columns right-aligned, cells wrapped to
    fit the terminal, the rows past ANSWER_ROWS counted in the caption."""
    shown = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    rows = table["rows"]
    for i, name in enumerate(table["columns"]):
        numeric = all(NUMBER.match(row[i]) for row in rows if row[i])
        shown.add_column(name, justify="right" if numeric else "left", overflow="fold")
    for row in rows[:ANSWER_ROWS]:
        shown.add_row(*row)
    if len(rows) > ANSWER_ROWS:
        shown.caption = f"{len(rows) - ANSWER_ROWS} more row(s) in answer.csv"
    return shown


SHOWN_ARTIFACTS = 20  # Figures and tables listed under the answer; the JSON and the run folder have them all.


def artifact_lines(result: RunResult) -> list[tuple[str, str]]:
    """(label, path) of each figure and table the run left, the path whole (under the run folder),
    then one line counting the other files; a long list ends with how many more there are."""
    base = result.run_dir or ""
    shown = [item for item in result.artifacts if item["kind"] != "file"]
    lines = [(item["kind"], os.path.join(base, item["path"])) for item in shown[:SHOWN_ARTIFACTS]]
    if len(shown) > SHOWN_ARTIFACTS:
        lines.append(("and", f"{len(shown) - SHOWN_ARTIFACTS} more figure(s) and table(s) (see --json)"))
    others = len(result.artifacts) - len(shown)
    if others:
        lines.append(("files", f"{others} other file(s) the scripts wrote, in {os.path.join(base, 'work')}"))
    return lines


INLINE_FIGURES = 4      # Figures drawn inline under the answer, in a terminal that can show them.
INLINE_COLUMNS = 100    # Widest an inline figure is drawn, in cells.


def render_result(result: RunResult, console: Console, images: str | None = None) -> None:
    """The closing summary panel. The reason is said once: under the answer, or as the headline when
    there is no answer. The note, assumptions and alternatives go under the answer. The run folder
    is not in the panel: the caller prints it on a line of its own (`finish_line`, `path_line`), where
    the panel's border cannot cut the path in two. `images`: the terminal's image protocol
    (inline_image.protocol), to draw the first figures under their path lines; None draws none."""
    label, style = _status(result)
    if result.table is not None:
        headline = Group(answer_table(result.table), *([Text(f"({result.note})")] if result.note else []))
    elif result.answer is not None:
        headline = Text(result.answer, style="bold")
        if result.note:
            headline.append(f"   ({result.note})", style="")
    elif result.outcome == "unanswerable":
        headline = Text(result.reason[:1].upper() + result.reason[1:], style="bold")
    else:
        headline = Text(f"No answer: {result.reason}", style="bold")
    readings = [Text(line, style="yellow" if line.startswith("other") else "") for line in reading_lines(result)]
    body = Group(headline, Text(label, style=style), *readings, Text(_usage_line(result), style="dim"))
    console.print(Panel(body, title="Answer", title_align="left", border_style=style))
    drawn = 0
    for label, path in artifact_lines(result):
        console.print(path_line(label, path), soft_wrap=True)  # Whole: no_wrap alone still folds it.
        if images and label == FIGURE and drawn < INLINE_FIGURES:
            drawn += inline_image.show(path, console.file, images, min(console.width, INLINE_COLUMNS))


def finish_line(result: RunResult, exit_code: int) -> str:
    """The one line that closes every run on stderr, whatever else was shown (`--json` included):
    how it ended and where its folder is, the path last so that it is copied whole."""
    return f"dsstar: {result.outcome} (exit {exit_code}); run folder {result.run_dir}\n"


def not_verified_line(result: RunResult, exit_code: int) -> str:
    """`--quiet`'s one line on stderr beside an answer the verifier did not confirm: stdout holds
    the answer alone, so without it only the exit code would tell."""
    return f"dsstar: the answer is not verified: {result.outcome} (exit {exit_code}): {result.reason}\n"


def plain_result(result: RunResult, stream: IO[str], folder: bool = True) -> None:
    """The closing summary as plain lines; `folder=False` when `finish_line` follows and names it."""
    label, _ = _status(result)
    stream.write(f"dsstar: outcome {result.outcome}: {result.reason}\n")
    if result.ambiguous:
        stream.write(f"dsstar: {label}\n")
    if result.note:
        stream.write(f"dsstar: note: {result.note}\n")
    for line in reading_lines(result):
        stream.write(f"dsstar: {line}\n")
    stream.write(f"dsstar: {_usage_line(result)}\n")
    for label, path in artifact_lines(result):
        stream.write(f"dsstar: {label} {path}\n")
    if folder:
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


RUN_COLUMNS = ("id", "started", "outcome", "rounds", "calls", "cost_usd", "data_dir", "question")
FOLDER_FROM = 120  # Terminal columns from which `dsstar runs` also shows the data folder.
FOLDER_WIDTH = 40


def _short_cost(run) -> str:
    if not run.calls:
        return "-"
    return f"${run.cost_usd:.4f}" if run.cost_usd is not None else "unknown"


def _short_folder(path: str | None) -> str:
    """The data folder, its end kept (the folder's own name tells runs apart, not /home/...)."""
    if not path:
        return "?"
    home = os.path.expanduser("~")
    if home not in ("", "/") and (path == home or path.startswith(home + os.sep)):
        path = "~" + path[len(home):]
    return path if len(path) <= FOLDER_WIDTH else "…" + path[-(FOLDER_WIDTH - 1):]


def runs_table(runs: list, width: int = 80) -> Table:
    """`dsstar runs` on a terminal: one row per run, newest first (see history.RunSummary). The id is
    always whole (it is what `runs show` and `resume` take, and it says when the run started); the
    question is cut to what fits, and the data folder is shown only on a wide terminal."""
    table = Table(title="dsstar runs, newest first", title_justify="left", box=box.SIMPLE_HEAD,
                  show_edge=False, pad_edge=False, collapse_padding=True,
                  caption="`dsstar runs show ID` replays a run; `dsstar resume ID` continues one")
    table.add_column("id", no_wrap=True)
    table.add_column("outcome", no_wrap=True)
    table.add_column("rounds", justify="right", no_wrap=True)
    table.add_column("cost", no_wrap=True)
    wide = width >= FOLDER_FROM
    if wide:
        table.add_column("data folder", min_width=12)
    table.add_column("question", min_width=8)  # Wrappable column, one-line cells: it gives way first.
    for run in runs:
        cells = [run.id, run.outcome, str(run.rounds), _short_cost(run)]
        if wide:
            cells.append(Text(visible(_short_folder(run.data_dir)), no_wrap=True, overflow="ellipsis"))
        cells.append(Text(visible(" ".join((run.question or "?").split())), no_wrap=True, overflow="ellipsis"))
        table.add_row(*cells)
    if not runs:
        table.caption = "no runs yet: `dsstar ask DATA_DIR QUESTION` makes one"
    return table


def runs_tsv(runs: list) -> str:
    """`dsstar runs` into a pipe: a header line, then one run a line, tab-separated, whole values
    (`cut -f1` gives the ids); tabs and newlines inside a value become spaces, an unknown is empty."""
    def cell(value) -> str:
        return "" if value is None else " ".join(str(value).split())

    lines = ["\t".join(RUN_COLUMNS)]
    for run in runs:
        row = run.as_dict()
        lines.append("\t".join(cell(row[name]) for name in RUN_COLUMNS))
    return "\n".join(lines) + "\n"
