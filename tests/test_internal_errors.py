"""An unexpected exception (a dsstar bug, or a chat model plugin raising what it should not) ends
that question as failed, with one line that names the error and where its traceback was kept:
never a traceback on the terminal, and in a batch the other questions still get answered."""

from __future__ import annotations

from pathlib import Path

from sample_agent import QUESTION, respond

from dsstar_cli.batch import Question, ask_batch
from dsstar_cli.model import Models, ScriptedModel
from dsstar_cli.result import ExitCode
from dsstar_cli.runner import AskRequest, ask

BROKEN = "Which merchant is broken?"


def planner_that_breaks(role: str, messages: list[dict]) -> str:
    """The sample agent, except that the planner raises on one question (a bug's stand-in)."""
    if role == "planner" and any(BROKEN in m["content"] for m in messages):
        raise IndexError("list index out of range")
    return respond(role, messages)


def test_an_unexpected_exception_fails_the_run_with_one_line_and_keeps_the_traceback(config, sample_copy):
    result = ask(AskRequest(sample_copy, BROKEN), config, lambda event: None,
                 models=Models(ScriptedModel(planner_that_breaks)))
    assert (result.outcome, result.error_kind, result.answer) == ("failed", "internal", None)
    assert result.exit_code() == ExitCode.FAILED
    log = Path(result.run_dir) / "error.log"
    assert result.reason.startswith("internal error (IndexError: list index out of range)") and str(log) in result.reason
    assert "Traceback (most recent call last)" in log.read_text() and "planner_that_breaks" in log.read_text()
    assert (Path(result.run_dir) / "result.json").exists()  # The run folder is finished like any other.


def test_a_bug_in_one_batch_question_does_not_end_the_batch(config, sample_copy):
    questions = [Question("broken", BROKEN), Question("fine", QUESTION)]
    reported = {}
    results = ask_batch(sample_copy, questions, config, 2, lambda q, r: reported.__setitem__(q.id, r),
                        lambda event: None, models_factory=lambda: Models(ScriptedModel(planner_that_breaks)))
    assert len(results) == 2 and set(reported) == {"broken", "fine"}
    assert (reported["broken"].outcome, reported["broken"].error_kind) == ("failed", "internal")
    assert reported["fine"].verified and reported["fine"].answer == "Golden Gate Gaming"
