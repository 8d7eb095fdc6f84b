"""Every event a real run emits renders in the live view and as plain lines."""

from __future__ import annotations

import io

from rich.console import Console

from dsstar_cli.display import LiveDisplay, PlainDisplay, render_result
from dsstar_cli.events import Recorder
from dsstar_cli.model import Models, ScriptedModel
from dsstar_cli.runner import AskRequest, ask


def py(code: str) -> str:
    return f"```python\n{code}\n```"


def recorded_run(config, data):
    config.values["max_rounds"] = 3
    recorder = Recorder()
    model = ScriptedModel({
        "planner": ["Load.", "Filter.", "Filter March."],
        "coder": [py("print('one')"), py("raise ValueError('bad [column]')"), py("print('three')")],
        "debugger": [py("print('two')")],
        "verifier": ["No", "No", "Yes"],
        "router": ["Add Step", "Step 2"],
        "finalizer": [py("print('42')")],
    })
    result = ask(AskRequest(data, "q?"), config, recorder, models=Models(model))
    return result, recorder


def test_live_display_renders_every_round(config, sample_copy):
    result, recorder = recorded_run(config, sample_copy)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100, color_system=None)
    display = LiveDisplay(console)
    for event in recorder.events:
        display(event)
    render_result(result, console)
    text = out.getvalue()
    for expected in ("Round 1/3", "Round 3/3", "Plan", "+ 2. Filter.", "Router: add a step",
                     "Router: step 2 is wrong", "Filter.", "ValueError: bad [column]", "Debugger, attempt 1",
                     "Verifier: sufficient", "transactions.csv", "42", "verified answer"):
        assert expected in text, expected


def test_plain_display_one_line_per_event_no_escape_codes(config, sample_copy):
    _, recorder = recorded_run(config, sample_copy)
    out = io.StringIO()
    display = PlainDisplay(out)
    for event in recorder.events:
        display(event)
    lines = out.getvalue().splitlines()
    assert all(line.startswith("dsstar: ") for line in lines) and "\x1b" not in out.getvalue()
    assert "dsstar: route: fix step 2" in lines and "dsstar: round 3/3" in lines
