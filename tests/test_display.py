"""Every event a real run emits renders in the live view and as plain lines."""

from __future__ import annotations

import io
from pathlib import Path

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


def test_every_event_kind_has_one_view_and_a_misspelt_kind_fails():
    import pytest

    from dsstar_cli.display import VIEWS
    from dsstar_cli.events import KINDS, Event

    assert set(VIEWS) == set(KINDS)
    with pytest.raises(ValueError, match="unknown event kind 'verdcit'"):
        Event("verdcit", {})


def live(events, width: int = 80) -> str:
    from dsstar_cli.events import Event

    out = io.StringIO()
    display = LiveDisplay(Console(file=out, force_terminal=True, width=width, color_system=None))
    for kind, data, when in events:
        display(Event(kind, data, when))
    display.close()
    return out.getvalue()


def test_long_code_lines_wrap_at_80_columns_instead_of_being_cut():
    line = "totals = frame.groupby(['merchant_id', 'month']).agg(rate=('is_fraud', 'mean')).reset_index()  # END"
    shown = live([("code", {"round": 1, "purpose": "solution", "code": line, "script": "001.py"}, 0)])
    assert "# END" in shown and "reset_index()" in shown


PANDAS_TRACEBACK = """Traceback (most recent call last):
  File "/run/scripts/001-round01-solution.py", line 3, in <module>
    tx["missing"]
  File "/usr/lib/python3/site-packages/pandas/core/frame.py", line 4102, in __getitem__
    indexer = self.columns.get_loc(key)
              ^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3/site-packages/pandas/core/indexes/base.py", line 3812, in get_loc
    raise KeyError(key) from err
KeyError: 'missing'"""


def test_a_failing_scripts_traceback_is_trimmed_and_not_repeated_for_every_attempt():
    from dsstar_cli.roles.debugger import summarize_error

    error = summarize_error(PANDAS_TRACEBACK)
    failed = {"round": 1, "purpose": "solution", "ok": False, "exit_code": 1, "timed_out": False, "seconds": 0.5,
              "stdout": "", "stderr": PANDAS_TRACEBACK, "error": error, "data_changed": []}
    shown = live([("execution", failed, 0), ("debug", {"round": 1, "attempt": 1, "error": error}, 0),
                  ("execution", failed, 0), ("debug", {"round": 1, "attempt": 2, "error": error}, 0),
                  ("execution", failed, 0)])
    assert shown.count("File ") == 1  # The traceback once in full; then one short line per repeat,
    assert "site-packages" not in shown and "get_loc" not in shown  # and one per debugger attempt.
    assert shown.count("the same error again: KeyError: 'missing'") == 2 and shown.count("KeyError: 'missing'") == 5


def test_the_verifiers_reason_is_shown_live_and_plain():
    from dsstar_cli.events import Event

    verdict = {"round": 1, "sufficient": False, "reason": "the output lacks the merchant names"}
    assert "Verifier: not sufficient — the output lacks the merchant names" in live([("verdict", verdict, 0)])
    out = io.StringIO()
    PlainDisplay(out)(Event("verdict", verdict))
    assert out.getvalue() == "dsstar: verdict: not sufficient: the output lacks the merchant names\n"


def test_an_answer_from_the_output_says_no_script_ran_live_and_plain():
    from dsstar_cli.events import Event

    event = {"round": 2, "answer": "42", "verified": True}
    assert "answered from the verified output, no script run" in live([("answered_from_output", event, 0)])
    out = io.StringIO()
    PlainDisplay(out)(Event("answered_from_output", {**event, "verified": False}))
    assert out.getvalue() == "dsstar: answered from the last script's output, no script run\n"


def call(cost):
    return {"role": "planner", "model": "m", "input_tokens": 1000, "output_tokens": 234, "cost_usd": cost,
            "seconds": 1.0}


def started():
    return {"question": "q?", "data_dir": "/d", "run_dir": "/r", "max_rounds": 3, "models": {"default": "m"},
            "resumed": False, "sandbox": {"level": "strong"}}


def test_the_spinner_line_shows_running_cost_or_tokens_and_elapsed_time():
    from dsstar_cli.display import RunView, VIEWS

    view = RunView()
    VIEWS["run_started"](started(), view, 100.0)
    VIEWS["call"](call(0.0125), view, 101.0)
    assert view.spent(112.4) == "$0.0125 · 12s"
    VIEWS["call"](call(None), view, 113.0)  # One unpriced call: the total is unknown, so tokens instead.
    assert view.spent(113.0) == "2,468 tokens · 13s"


def test_the_reason_of_a_run_without_an_answer_is_said_once(config, sample_copy):
    from dsstar_cli.result import RunResult

    result = RunResult(question="q", answer=None, outcome="interrupted", verified=False,
                       reason="interrupted by SIGINT; continue with: dsstar resume /r/1", rounds=1, max_rounds=3,
                       plan=[], history=[], final_code="", final_output="", files=[], files_used=[],
                       usage={"total": {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}},
                       elapsed_s={"total": 1.0}, models={"default": "m"}, run_dir="/r/1", data_dir="/d")
    out = io.StringIO()
    render_result(result, Console(file=out, force_terminal=True, width=120, color_system=None))
    text = out.getvalue()
    assert text.count("dsstar resume") == 1
    assert "$0.0000" not in text and "no model call completed" in text


def test_no_color_in_a_terminal_keeps_the_live_view(tmp_path):
    from dsstar_cli.display import wants_live_view

    terminal = Console(file=io.StringIO(), force_terminal=True)
    assert wants_live_view(terminal, env={})
    assert wants_live_view(terminal, env={"NO_COLOR": "1"})  # Colour goes (the Console's part), not the layout.
    assert wants_live_view(terminal, env={"NO_COLOR": "1", "FORCE_COLOR": "1"})
    assert not wants_live_view(Console(file=io.StringIO(), force_terminal=False), env={})


def test_a_resumed_runs_final_script_is_named_for_its_last_round(config, sample_copy, monkeypatch, tmp_path):
    """After a resume straight into the finalizer, the script says round01, not round00; a relative
    path to the run folder works."""
    from dsstar_cli.runner import resume

    config.values["max_rounds"] = 1
    scripted = {"planner": ["Load."], "coder": [py("print('one')")], "verifier": ["No"],
                "finalizer": [py("print('42')")]}
    result = ask(AskRequest(sample_copy, "q?"), config, Recorder(), models=Models(ScriptedModel(scripted)))
    run_dir = Path(result.run_dir)
    (run_dir / "result.json").unlink()  # As if killed just before the result was written.
    monkeypatch.chdir(run_dir.parent)
    recorder = Recorder()
    again = resume(run_dir.name, recorder, models=Models(ScriptedModel(scripted)))
    assert again.answer == "42" and again.run_dir == str(run_dir)
    assert [d["script"] for d in recorder.of("code")] == ["003-round01-final.py"]
