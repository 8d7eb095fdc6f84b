"""Retries, back-offs and timeouts are seen as they happen (issue 23): every failed attempt is a
`retry` event from the model layer, with what happened (HTTP status, a timeout after N s, an
unreadable reply), the attempt and the wait before the next, shown in yellow in the live view (its
status line saying it waits to retry), as a plain line, in --jsonl and in the run folder's
events.jsonl. A real OpenAI-compatible server on 127.0.0.1, the real litellm path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import cli_env
from test_model_faults import Faulty
from test_terminal import run_in_terminal, terminal_env

from dsstar_cli.events import Recorder
from dsstar_cli.model import LiteLLMModel, ModelConfigError, ModelUnreachable, import_litellm

HI = [{"role": "user", "content": "You are the planner of dsstar. Hi."}]
FLAKY = ["429", "500", "nonjson"]  # Then the server answers.
SHOWN = ["planner: HTTP 429: rate-limited (attempt 1 of 4); retrying now",
         "planner: HTTP 500: server error (attempt 2 of 4); retrying now",
         "planner: unreadable reply: not JSON (attempt 3 of 4); retrying now"]


@pytest.fixture(autouse=True, scope="module")
def litellm_imported():
    import_litellm()


def retries(recorder: Recorder) -> list[tuple]:
    return [(r["role"], r["error"], r["status"], r["attempt"], r["attempts"], r["wait_s"])
            for r in recorder.of("retry")]


def test_each_failed_attempt_is_an_event_with_what_happened_and_the_wait():
    recorder = Recorder()
    with FakeOpenAIServer(respond, faults=FLAKY) as server:
        model = LiteLLMModel("openai/fake", api_base=server.base_url, timeout_s=5, attempts=4, max_delay_s=0)
        reply = model.complete(HI, role="planner", emit=recorder)
    assert reply.text and len(server.requests) == 4
    assert retries(recorder) == [("planner", "HTTP 429: rate-limited", 429, 1, 4, 0.0),
                                 ("planner", "HTTP 500: server error", 500, 2, 4, 0.0),
                                 ("planner", "unreadable reply: not JSON", None, 3, 4, 0.0)]


def test_the_wait_is_the_backoff_actually_slept():
    recorder, slept = Recorder(), []
    with FakeOpenAIServer(respond, faults=["429", "500"]) as server:
        model = LiteLLMModel("openai/fake", api_base=server.base_url, timeout_s=5, attempts=3, max_delay_s=30,
                             sleep=slept.append)
        model.complete(HI, role="coder", emit=recorder)
    assert [r["wait_s"] for r in recorder.of("retry")] == [round(s, 2) for s in slept]
    assert slept[0] == 1.0  # The server's Retry-After.


def test_a_timeout_says_after_how_long_and_the_last_attempt_says_it_gives_up():
    recorder = Recorder()
    with FakeOpenAIServer(respond, faults=["hang", "hang"]) as server:
        model = LiteLLMModel("openai/fake", api_base=server.base_url, timeout_s=1, attempts=2, max_delay_s=0)
        with pytest.raises(ModelUnreachable, match="did not answer in time"):
            model.complete(HI, role="planner", emit=recorder)
    assert retries(recorder) == [("planner", "no answer within 1 s", None, 1, 2, 0.0),
                                 ("planner", "no answer within 1 s", None, 2, 2, None)]


def test_a_failure_retrying_cannot_help_is_no_retry():
    recorder = Recorder()
    server = Faulty([(401, {}, {"error": {"message": "Incorrect API key provided"}})])
    try:
        model = LiteLLMModel("openai/fake", api_base=server.url, timeout_s=5, attempts=3, max_delay_s=0)
        with pytest.raises(ModelConfigError):
            model.complete(HI, role="planner", emit=recorder)
    finally:
        server.close()
    assert server.count == 1 and recorder.events == []


# --- a real dsstar process -------------------------------------------------------------------------


def config(tmp_path: Path, retries: int = 4, delay: float = 0) -> None:
    (tmp_path / "dsstar.yaml").write_text(f"llm:\n  retries: {retries}\n  retry_max_delay_s: {delay}\n")


def argv(data: Path, base_url: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "dsstar_cli", "ask", str(data), QUESTION, "--model", "openai/fake",
            "--api-base", base_url, *extra]


def journal(tmp_path: Path) -> list[dict]:
    """The retry events of the one run folder made under tmp_path."""
    found = list(tmp_path.glob("xdg-data/dsstar/runs/*/events.jsonl"))
    assert len(found) == 1, found
    return [e for e in map(json.loads, found[0].read_text().splitlines()) if e["event"] == "retry"]


def test_plain_lines_and_the_run_folder_show_every_retry(tmp_path, sample_copy):
    config(tmp_path)
    with FakeOpenAIServer(respond, faults=FLAKY) as server:
        proc = subprocess.run(argv(sample_copy, server.base_url), cwd=tmp_path, env=cli_env(tmp_path),
                              capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    shown = [line for line in proc.stderr.splitlines() if "attempt" in line]
    assert shown == [f"dsstar: {line}" for line in SHOWN]
    order = proc.stderr.splitlines()  # As they happened: before the plan the call brought.
    plan = next(i for i, line in enumerate(order) if line.startswith("dsstar: plan step 1: "))
    assert order.index(f"dsstar: {SHOWN[0]}") < order.index(f"dsstar: {SHOWN[2]}") < plan
    assert [(e["error"], e["status"], e["attempt"], e["wait_s"]) for e in journal(tmp_path)] == [
        ("HTTP 429: rate-limited", 429, 1, 0.0), ("HTTP 500: server error", 500, 2, 0.0),
        ("unreadable reply: not JSON", None, 3, 0.0)]


def test_jsonl_streams_the_retries(tmp_path, sample_copy):
    config(tmp_path)
    with FakeOpenAIServer(respond, faults=FLAKY) as server:
        proc = subprocess.run(argv(sample_copy, server.base_url, "--jsonl"), cwd=tmp_path, env=cli_env(tmp_path),
                              capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds.count("retry") == 3
    first = kinds.index("retry")
    assert kinds[first - 1] == "call_started" and kinds[first:first + 4] == ["retry", "retry", "retry", "call"]
    assert [e["error"] for e in events if e["event"] == "retry"] == [
        "HTTP 429: rate-limited", "HTTP 500: server error", "unreadable reply: not JSON"]


def test_a_hanging_server_on_a_terminal_shows_each_timeout_and_the_wait(tmp_path, sample_copy):
    """The issue's case: `--llm-timeout` with a server that never answers showed only `planner:
    planning the next step · 0 tokens` until the run failed."""
    config(tmp_path, retries=2, delay=1)
    env = terminal_env(tmp_path)
    with FakeOpenAIServer(respond, faults=["hang"] * 2) as server:
        shown = run_in_terminal(argv(sample_copy, server.base_url, "--llm-timeout", "1"), tmp_path, env)
    assert "planner: no answer within 1 s (attempt 1 of 2); retrying in " in shown, shown[-3000:]
    assert "planner: no answer within 1 s (attempt 2 of 2); giving up" in shown
    assert "planner: waiting 1s to retry (no answer within 1 s)" in shown   # the status line, during the wait
    assert "(attempt 2 of 2)" in shown.split("retrying in ", 1)[1]          # ...then the attempt under way
    assert [(e["attempt"], e["wait_s"] is None) for e in journal(tmp_path)] == [(1, False), (2, True)]
