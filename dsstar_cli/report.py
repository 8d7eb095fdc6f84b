"""A run as one self-contained HTML page to send to someone who does not run dsstar: the question,
the answer (a table answer as a table) with its reading, the plan, each script with its output,
the figures embedded, and the model calls with their tokens, cost and time.

Built from what the run folder keeps (result.json, events.jsonl, the figures in work/), offline:
no script, no font, no stylesheet or image is fetched from anywhere (a Content-Security-Policy
says so to the browser too). Every text is escaped; a figure is re-encoded by pillow first
(inline_image.png_for_terminal: links never followed, size bounded) and embedded as a PNG data URI,
so nothing a script wrote reaches the page as markup; an SVG or PDF is listed, not embedded."""

from __future__ import annotations

import base64
import html
import os
from pathlib import Path

from dsstar_cli.artifacts import FIGURE, TABLE
from dsstar_cli.display import cost_text, reading_lines
from dsstar_cli.events import Event
from dsstar_cli.inline_image import png_for_terminal
from dsstar_cli.result import RunResult

STYLE = """
body{font-family:system-ui,-apple-system,"DejaVu Sans",sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
color:#1b1b1b;line-height:1.45}
h1{font-size:1.4rem}h2{font-size:1.15rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
.answer{font-size:1.3rem;font-weight:600;background:#eef6ee;border-left:.3rem solid #2e7d32;padding:.6rem 1rem}
.unverified{background:#fff6e0;border-color:#b26a00}.meta{color:#555;font-size:.9rem}
pre{background:#f6f6f6;padding:.6rem;overflow-x:auto;font-size:.85rem;white-space:pre-wrap;word-break:break-word}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:left}
figure{margin:1rem 0}img{max-width:100%;border:1px solid #ddd}figcaption{color:#555;font-size:.85rem}
details{margin:.5rem 0}summary{cursor:pointer;font-weight:600}
"""
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
MAX_OUTPUT_CHARS = 20_000  # Of each script's output on the page; the run folder keeps it whole.


def e(text: object) -> str:
    return html.escape("" if text is None else str(text))


def render(folder: Path, result: RunResult, events: list[Event]) -> str:
    """The page for the run in `folder`."""
    title = f"dsstar: {result.question}"
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8>"
             f"<meta http-equiv=Content-Security-Policy content=\"{CSP}\">"
             f"<meta name=viewport content=\"width=device-width\"><title>{e(title)}</title>"
             f"<style>{STYLE}</style></head><body>",
             f"<h1>{e(result.question)}</h1>",
             _answer(result), _figures(folder, result), _plan(result), _scripts(events), _calls(result, events),
             f"<p class=meta>run {e(folder.name)} · dsstar {e(result.dsstar_version)} · data {e(result.data_dir)}</p>",
             "</body></html>"]
    return "\n".join(part for part in parts if part)


def _answer(result: RunResult) -> str:
    verified = result.outcome in ("verified", "unanswerable")
    box = "answer" if verified else "answer unverified"
    if result.table:
        body = _table(result.table["columns"], result.table["rows"])
    else:
        body = e(result.answer if result.answer is not None else f"No answer: {result.reason}")
    lines = [f"<h2>Answer</h2><div class=\"{box}\">{body}</div>",
             f"<p class=meta>{e(result.outcome)}: {e(result.reason)}</p>"]
    if result.note:
        lines.append(f"<p>Note: {e(result.note)}</p>")
    reading = reading_lines(result)
    if reading:
        lines.append("<ul>" + "".join(f"<li>{e(line)}</li>" for line in reading) + "</ul>")
    return "\n".join(lines)


def _table(columns: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{e(name)}</th>" for name in columns)
    body = "".join("<tr>" + "".join(f"<td>{e(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figures(folder: Path, result: RunResult) -> str:
    shown, listed = [], []
    for item in result.artifacts:
        path = os.path.join(folder, item["path"])
        png = png_for_terminal(path) if item["kind"] == FIGURE else None
        if png is not None:
            uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
            shown.append(f"<figure><img src=\"{uri}\" alt=\"{e(item['path'])}\">"
                         f"<figcaption>{e(item['path'])}</figcaption></figure>")
        elif item["kind"] in (FIGURE, TABLE):
            listed.append(f"<li>{e(item['kind'])}: {e(path)}</li>")
    if not shown and not listed:
        return ""
    return "<h2>Figures and tables</h2>" + "".join(shown) + (f"<ul>{''.join(listed)}</ul>" if listed else "")


def _plan(result: RunResult) -> str:
    if not result.plan:
        return ""
    return "<h2>Plan</h2><ol>" + "".join(f"<li>{e(step)}</li>" for step in result.plan) + "</ol>"


def _scripts(events: list[Event]) -> str:
    """Each script the run ran, in order, with what it printed (the output follows its code event)."""
    blocks, current = [], None
    for event in events:
        if event.kind == "code":
            current = event.data
        elif event.kind == "execution" and current is not None:
            out = (event.data.get("stdout") or "") + (event.data.get("error") or event.data.get("stderr") or "")
            out = out if len(out) <= MAX_OUTPUT_CHARS else out[:MAX_OUTPUT_CHARS] + "\n[... cut: the run folder has it all]"
            state = "ok" if event.data.get("ok") else "failed"
            blocks.append(f"<details><summary>{e(current.get('script', ''))} · {e(current.get('purpose'))} · {state} "
                          f"in {event.data.get('seconds', 0):.1f}s</summary><pre>{e(current.get('code'))}</pre>"
                          f"<p>Output:</p><pre>{e(out) or '(no output)'}</pre></details>")
            current = None
    return ("<h2>Scripts</h2>" + "".join(blocks)) if blocks else ""


def _calls(result: RunResult, events: list[Event]) -> str:
    rows = [[c.get("role"), c.get("model"), f"{c.get('input_tokens', 0):,}", f"{c.get('output_tokens', 0):,}",
             "unknown" if c.get("cost_usd") is None else f"${c['cost_usd']:.4f}", f"{c.get('seconds') or 0:.1f}s"]
            for c in (event.data for event in events if event.kind == "call")]
    total = result.usage.get("total", {})
    summary = (f"<p>{total.get('calls', 0)} model calls · {total.get('input_tokens', 0):,} in / "
               f"{total.get('output_tokens', 0):,} out tokens · {e(cost_text(total))} · "
               f"{result.elapsed_s.get('total', 0):.1f}s in all · {result.rounds}/{result.max_rounds} rounds</p>")
    table = _table(["role", "model", "input tokens", "output tokens", "cost", "time"], rows) if rows else ""
    return "<h2>Model calls</h2>" + summary + table
