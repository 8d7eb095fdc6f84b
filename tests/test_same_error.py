"""A traceback is shown once: when the debugger's next attempt fails the same way (the same error in
the same place; only the script's own name differs), the live view and the plain lines say so in
one short line. The CLI in a subprocess against the fake server, on an 80-column pseudo-terminal."""

from __future__ import annotations

from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import dsstar
from test_streams import in_terminal

BROKEN = '```python\nrows = {"a": 1}\nprint("reading")\nprint(rows["missing_column"])\n```'
AGAIN = "the same error again: KeyError: 'missing_column'"


def always_broken(role: str, messages: list[dict]) -> str:
    """Every script, and every repair of it, fails with the same KeyError."""
    return BROKEN if role in ("coder", "debugger") else respond(role, messages)


def test_the_same_traceback_is_shown_once_in_the_live_view(tmp_path):
    with FakeOpenAIServer(always_broken) as server:
        shown, _, _ = in_terminal(["ask", str(SAMPLE_DATA), QUESTION, "--model", "openai/fake", "--api-base",
                                   server.base_url, "--max-rounds", "1"], tmp_path, {})
    assert shown.count("Traceback (most recent call last)") == 1, shown[-3000:]
    assert shown.count(AGAIN) == 3  # debug_attempts (3) repairs, each failing the same way.


def test_the_same_error_is_one_short_line_in_plain_output(tmp_path):
    with FakeOpenAIServer(always_broken) as server:
        proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--model", "openai/fake", "--api-base", server.base_url,
                      "--max-rounds", "1", cwd=tmp_path)
    failed = [line for line in proc.stderr.splitlines() if line.startswith("dsstar: script failed")]
    assert len(failed) == 4, proc.stderr
    assert failed[0].endswith(": KeyError: 'missing_column'") and AGAIN not in failed[0]
    assert all(line.endswith(AGAIN) for line in failed[1:])


def test_a_different_error_is_shown_whole(tmp_path):
    scripts = iter(['```python\nprint({}["first"])\n```', '```python\nprint(1 / 0)\n```'] * 4)

    def two_errors(role: str, messages: list[dict]) -> str:
        return next(scripts) if role in ("coder", "debugger") else respond(role, messages)

    with FakeOpenAIServer(two_errors) as server:
        shown, _, _ = in_terminal(["ask", str(SAMPLE_DATA), QUESTION, "--model", "openai/fake", "--api-base",
                                   server.base_url, "--max-rounds", "1"], tmp_path, {})
    assert shown.count("Traceback (most recent call last)") == 2, shown[-3000:]
    assert "the same error again: KeyError: 'first'" in shown
    assert "the same error again: ZeroDivisionError: division by zero" in shown

