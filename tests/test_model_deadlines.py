"""A model server that stalls, drips, breaks or is not there, and a user who stops the run: every
case ends in bounded wall time with the documented exit code and one clear line, and the data
folder unchanged. Issue 14: `--llm-timeout` bounds a call by wall clock (a byte every 2 s defeats
per-read timeouts), `--timeout` bounds the run with its calls in flight, the first Ctrl-C or SIGTERM
stops the run at once, and no library warning or traceback reaches the user."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import tree_bytes
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import cli_env

from dsstar_cli.errors import StopRequest, Terminated
from dsstar_cli.events import Recorder
from dsstar_cli.result import ExitCode
from dsstar_cli.model import (LiteLLMModel, Models, ModelUnreachable, RunDeadline, ScriptedModel, import_litellm,
                              short_detail)
from dsstar_cli.runner import AskRequest, ask

HI = [{"role": "user", "content": "You are the planner of dsstar. Hi."}]
# The machine running the suite has two busy cores: a dsstar process spends seconds importing
# litellm and starting its sandbox before its run (and its --timeout clock) starts.
STARTUP_S = 10
NOISE = ("Traceback", "pydantic", "Pydantic", "Warning", "litellm.", "InternalServerError", "OpenAIException")


def config(tmp_path: Path, retries: int = 2) -> None:
    (tmp_path / "dsstar.yaml").write_text(f"llm:\n  retries: {retries}\n  retry_max_delay_s: 1\n")


def argv(data: Path, base_url: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "dsstar_cli", "ask", str(data), QUESTION, "--model", "openai/fake",
            "--api-base", base_url, *extra]


def run(tmp_path: Path, data: Path, base_url: str, *extra: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    proc = subprocess.run(argv(data, base_url, *extra), cwd=tmp_path, env=cli_env(tmp_path), capture_output=True,
                          text=True, timeout=180, stdin=subprocess.DEVNULL)
    return proc, time.monotonic() - started


def the_result(tmp_path: Path) -> dict:
    """The result.json of the one run made under tmp_path (for --quiet runs, which print no JSON)."""
    found = list(tmp_path.glob("xdg-data/dsstar/runs/*/result.json"))
    assert len(found) == 1, found
    return json.loads(found[0].read_text())


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def wait_for(condition, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def clean(text: str) -> None:
    for noise in NOISE:
        assert noise not in text, f"{noise!r} reached the user: {text}"


# --- the adapter alone: wall-clock bounds, fast ---------------------------------------------------


@pytest.fixture(autouse=True, scope="module")
def litellm_imported():
    """Import litellm (seconds) before any test times a call."""
    import_litellm()


@pytest.mark.parametrize("fault", ["drip", "drip_headers", "hang"])
def test_each_attempt_is_bounded_by_wall_clock_even_when_the_server_drips(fault):
    with FakeOpenAIServer(respond, faults=[fault] * 3) as server:
        model = LiteLLMModel("openai/fake", api_base=server.base_url, timeout_s=2, attempts=2, sleep=lambda s: None)
        started = time.monotonic()
        with pytest.raises(ModelUnreachable, match=r"did not answer in time after 2 attempt\(s\)"):
            model.complete(HI, role="planner")
        took = time.monotonic() - started
    assert len(server.requests) == 2 and 3.9 < took < 2 * 2 + 3


def test_the_run_deadline_abandons_the_call_and_its_retries():
    with FakeOpenAIServer(respond, faults=["drip"] * 5) as server:
        model = LiteLLMModel("openai/fake", api_base=server.base_url, timeout_s=180, attempts=4)
        started = time.monotonic()
        with pytest.raises(RunDeadline):
            model.complete(HI, role="planner", deadline=started + 2)
        took = time.monotonic() - started
    assert 1.9 < took < 4 and len(server.requests) == 1


def test_a_stop_request_from_another_thread_ends_the_call_at_once():
    """Batch workers get no signals: the main thread sets their stop request instead."""
    for stop_with, expected in ((KeyboardInterrupt(), KeyboardInterrupt), (Terminated(), Terminated)):
        stop = StopRequest()
        with FakeOpenAIServer(respond, faults=["hang"]) as server:
            model = LiteLLMModel("openai/fake", api_base=server.base_url, timeout_s=60)
            threading.Timer(1.0, stop.request, [stop_with]).start()
            started = time.monotonic()
            with pytest.raises(expected):
                model.complete(HI, role="planner", stop=stop)
            assert time.monotonic() - started < 2.5


def test_an_abandoned_call_that_answers_late_changes_nothing():
    """The reply comes whole after 2.4 s, each piece well within the per-read timeout: the wall clock
    abandons the call at 1 s, and the reply that arrives later is dropped."""
    with FakeOpenAIServer(respond, faults=["slow"]) as server:
        models = Models(LiteLLMModel("openai/fake", api_base=server.base_url, timeout_s=1, attempts=1))
        started = time.monotonic()
        with pytest.raises(ModelUnreachable, match="did not answer in time"):
            models.ask("planner", HI)
        assert time.monotonic() - started < 2
        wait_for(lambda: server.busy_s, timeout=10)  # The server sent the whole reply...
        time.sleep(0.5)
        assert len(server.requests) == 1
    assert models.usage == {} and models.total().calls == 0  # ...and nothing counted it.


def test_library_error_text_is_cut_to_its_gist():
    text = ("litellm.InternalServerError: InternalServerError: OpenAIException - Invalid response object "
            "Traceback (most recent call last):\n  File \"x.py\", line 1\nTypeError: litellm.types.utils.Usage()")
    assert short_detail(Exception(text)) == "Invalid response object"
    assert short_detail(Exception("litellm.BadRequestError: OpenAIException - Error code: 400 - "
                                  "{'error': {'message': 'max_tokens is too large', 'type': 'x'}}")) \
        == "max_tokens is too large"


# --- the loop with a scripted model ----------------------------------------------------------------


def py(code: str) -> str:
    return f"```python\n{code}\n```"


def test_when_the_finalizers_grace_runs_out_too_the_run_fails_cleanly(config, sample_copy, monkeypatch):
    """Round 2's script outlives --timeout; the finalizer's grace period (0 s here) is over before
    its call: the run ends as failed with both reasons, not with an exception."""
    from dsstar_cli import agent

    monkeypatch.setattr(agent, "FINALIZE_GRACE_S", 0.0)
    config.values["budget.timeout_s"] = 2
    model = ScriptedModel({"planner": ["Print 1.", "Wait."], "verifier": ["No"], "router": ["Add Step"],
                           "coder": [py("print(1)"), py("import time; time.sleep(30)")], "finalizer": [py("print(1)")]})
    started = time.monotonic()
    result = ask(AskRequest(sample_copy, "q?"), config, lambda event: None, models=Models(model), files=[])
    assert time.monotonic() - started < 2 + 5
    assert result.outcome == "failed" and result.answer is None
    assert result.reason == ("the time budget (2 s, --timeout) ran out, and the final answer's grace period (0 s) "
                             "ran out before the final answer was written")
    assert "finalizer" not in [role for role, _ in model.calls]


def test_out_of_time_the_finalizer_may_answer_from_round_1s_output(config, sample_copy):
    """Round 2's script outlives --timeout; the finalizer copies the answer from round 1's output:
    no script runs after the deadline, and the answer is marked as the time budget's."""
    config.values["budget.timeout_s"] = 2
    model = ScriptedModel({"planner": ["Print 1.", "Wait."], "verifier": ["No"], "router": ["Add Step"],
                           "coder": [py("print('value:', 1)"), py("import time; time.sleep(30)")],
                           "finalizer": ["```answer\n1\n```"]})
    recorder = Recorder()
    result = ask(AskRequest(sample_copy, "q?"), config, recorder, models=Models(model), files=[])
    assert (result.outcome, result.answer, result.answer_from) == ("time_limit", "1", "solution_output")
    assert result.exit_code() == ExitCode.TIME_LIMIT and "--timeout" in result.reason
    assert [e["purpose"] for e in recorder.of("execution")] == ["solution", "solution"]  # none after the deadline
    assert "value: 1" in [m for role, m in model.calls if role == "finalizer"][0][-1]["content"]


@pytest.mark.parametrize("signal_exc, name", [(KeyboardInterrupt(), "SIGINT"), (Terminated(), "SIGTERM")])
def test_a_stop_request_ends_a_batch_question_as_its_signal(config, sample_copy, signal_exc, name):
    stop = StopRequest()
    stop.request(signal_exc)
    model = ScriptedModel({"planner": ["Print 1."]})
    result = ask(AskRequest(sample_copy, "q?", stop=stop), config, lambda event: None, models=Models(model), files=[])
    assert (result.outcome, result.error_kind) == ("interrupted", name) and model.calls == []
    assert result.reason == f"interrupted by {name}; it stopped before its first round ended, so ask the question again"


def test_a_stop_request_kills_a_batch_questions_script_in_flight(config, sample_copy):
    """Only the main thread gets signals: a question's thread waiting on a 60 s script hears the stop
    request at once, the script is killed, and the run ends as interrupted."""
    stop = StopRequest()
    model = ScriptedModel({"planner": ["Wait."], "coder": ["```python\nimport time\ntime.sleep(60)\n```"]})
    events, sent = [], []

    def stop_soon() -> None:
        wait_for(lambda: any(e.kind == "code" for e in events))
        time.sleep(1)  # The script is running (or its worker starting).
        sent.append(time.monotonic())
        stop.request(Terminated())

    threading.Thread(target=stop_soon, daemon=True).start()
    result = ask(AskRequest(sample_copy, "q?", stop=stop), config, events.append, models=Models(model), files=[])
    assert time.monotonic() - sent[0] < 5  # Not the script's 60 s.
    assert (result.outcome, result.error_kind) == ("interrupted", "SIGTERM")
    assert not [e for e in events if e.kind == "execution"]  # killed, never reported as a finished script


# --- end to end: a real dsstar process -------------------------------------------------------------


def test_a_dripping_server_is_cut_at_llm_timeout_then_retried(tmp_path, sample_copy):
    """1 byte every 2 s: before issue 14 the first call was still running at 90 s."""
    before = tree_bytes(sample_copy)
    config(tmp_path, retries=2)
    with FakeOpenAIServer(respond, faults=["drip"] * 10) as server:
        proc, took = run(tmp_path, sample_copy, server.base_url, "--llm-timeout", "3", "--quiet")
    result = the_result(tmp_path)
    assert proc.returncode == 5 and result["error_kind"] == "model_unreachable", proc.stderr
    assert len(server.requests) == 2                       # the retry policy, each attempt bounded
    assert result["elapsed_s"]["loop"] < 2 * 3 + 1 + 3     # two attempts and one backoff of at most 1 s
    assert took < 2 * 3 + 1 + STARTUP_S + 5
    assert lines(proc.stderr) == [f"dsstar: no answer: {result['reason']}"]
    assert "did not answer in time after 2 attempt(s)" in result["reason"]
    clean(proc.stderr + result["reason"])
    assert tree_bytes(sample_copy) == before


def test_timeout_abandons_the_first_call_in_flight(tmp_path, sample_copy):
    """No --llm-timeout (180 s by default): only --timeout can end this call."""
    before = tree_bytes(sample_copy)
    config(tmp_path)
    with FakeOpenAIServer(respond, faults=["hang"] * 5) as server:
        proc, took = run(tmp_path, sample_copy, server.base_url, "--timeout", "12", "--quiet")
    result = the_result(tmp_path)
    assert proc.returncode == 1 and result["outcome"] == "failed", proc.stderr   # no script had run: no answer
    assert result["reason"].startswith("the time budget (12 s, --timeout) ran out")
    # The clock starts with the process (imports and the sandbox's start count too).
    assert result["elapsed_s"]["total"] < 12 + 2 and took < 12 + 5
    assert len(server.requests) == 1
    assert lines(proc.stderr) == [f"dsstar: no answer: {result['reason']}"]
    assert tree_bytes(sample_copy) == before


def test_timeout_abandons_a_call_mid_run_and_the_finalizer_still_answers(tmp_path, sample_copy):
    """Round 2's coder call hangs; at the deadline it is abandoned and the finalizer answers from
    round 1's script within its grace period: exit 8. (20 s from the process's start: round 1 must
    be done by then, start-up and analysis included, on a busy machine.)"""
    before = tree_bytes(sample_copy)
    config(tmp_path)
    with FakeOpenAIServer(respond, faults=["ok"] * 5 + ["hang"]) as server:
        proc, took = run(tmp_path, sample_copy, server.base_url, "--timeout", "20", "--json", "--no-progress")
        roles = server.roles()
    result = json.loads(proc.stdout)
    assert proc.returncode == 8 and result["outcome"] == "time_limit", proc.stderr
    assert result["answer"] == "Golden Gate Gaming" and not result["verified"]
    assert "time budget (20 s, --timeout)" in result["reason"]
    assert roles == ["planner", "coder", "verifier", "router", "planner", "coder", "finalizer"]
    assert result["elapsed_s"]["total"] < 20 + 3 and took < 20 + 5
    assert proc.stderr == f"dsstar: time_limit (exit 8); run folder {result['run_dir']}\n"  # How it ended, alone.
    assert tree_bytes(sample_copy) == before


@pytest.mark.parametrize("sig, code, name", [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_the_first_signal_stops_a_call_in_flight(tmp_path, sample_copy, sig, code, name):
    """Round 2's router call never answers; one signal ends the run at once, the run folder kept."""
    before = tree_bytes(sample_copy)
    config(tmp_path)
    with FakeOpenAIServer(respond, faults=["ok"] * 3 + ["hang"] * 5) as server:
        proc = subprocess.Popen(argv(sample_copy, server.base_url), cwd=tmp_path, env=cli_env(tmp_path),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        wait_for(lambda: len(server.requests) >= 4)
        time.sleep(0.5)  # Well into the call.
        sent = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    assert proc.returncode == code, err
    assert took < 3 + 2
    assert err.count("dsstar resume") == 1 and f"interrupted by {name}" in err
    clean(err)
    result = the_result(tmp_path)
    assert result["outcome"] == "interrupted" and result["error_kind"] == name
    assert (Path(result["run_dir"]) / "state.json").exists()
    assert out == ""  # No answer: nothing on stdout.
    assert tree_bytes(sample_copy) == before


@pytest.mark.parametrize("sig, code, name", [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_the_first_signal_stops_a_batch_whose_workers_are_all_in_calls(tmp_path, sample_copy, sig, code, name):
    before = tree_bytes(sample_copy)
    config(tmp_path)
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": f"q{i}", "question": QUESTION}) + "\n" for i in range(4)))
    out_file = tmp_path / "answers.jsonl"
    with FakeOpenAIServer(respond, faults=["hang"] * 10) as server:
        command = [sys.executable, "-m", "dsstar_cli", "ask", str(sample_copy), "--questions", str(questions),
                   "--workers", "2", "--out", str(out_file), "--model", "openai/fake", "--api-base", server.base_url]
        proc = subprocess.Popen(command, cwd=tmp_path, env=cli_env(tmp_path), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        wait_for(lambda: len(server.requests) >= 2)   # Both workers wait on a server that never answers.
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
        requests = len(server.requests)
    assert proc.returncode == code, err
    assert took < 3 + 2
    assert err.count("rerun with the same --out") == 1
    clean(err)
    reported = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert len(reported) == 2 and {r["outcome"] for r in reported} == {"interrupted"}
    assert {r["error_kind"] for r in reported} == {name} and {r["exit_code"] for r in reported} == {code}
    assert requests == 2  # The questions not started were dropped.
    assert [json.loads(line) for line in out.splitlines()] == reported
    assert tree_bytes(sample_copy) == before


@pytest.mark.parametrize("faults, code", [(["usage_text", "usage_str"], 0), (["usage_text"] * 20, 5)])
def test_a_malformed_usage_field_prints_no_library_noise(tmp_path, sample_copy, faults, code):
    """Once: the attempt is retried and the run goes on. Always: exit 5, in one clean line."""
    before = tree_bytes(sample_copy)
    config(tmp_path, retries=3)
    with FakeOpenAIServer(respond, faults=faults) as server:
        proc, took = run(tmp_path, sample_copy, server.base_url)
    result = the_result(tmp_path)
    assert proc.returncode == code, proc.stderr
    clean(proc.stderr + result["reason"] + json.dumps(result))
    if code == 0:
        assert proc.stdout.strip() == "Golden Gate Gaming" and len(server.requests) == 8 + 2
    else:
        assert result["error_kind"] == "model_unreachable" and len(server.requests) == 3
        assert "not valid chat completions (e.g. a malformed `usage` field)" in result["reason"]
        assert [line for line in lines(proc.stderr) if result["reason"] in line] == \
            [f"dsstar: outcome failed: {result['reason']}"]
    assert took < 60 and tree_bytes(sample_copy) == before


def test_a_server_that_is_not_there_is_one_clean_line(tmp_path, sample_copy):
    before = tree_bytes(sample_copy)
    config(tmp_path, retries=1)
    with socket.socket() as probe:  # A port nothing listens on.
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc, took = run(tmp_path, sample_copy, f"http://127.0.0.1:{port}/v1", "--quiet")
    assert proc.returncode == 5
    assert lines(proc.stderr) == [f"dsstar: no answer: cannot reach openai/fake at http://127.0.0.1:{port}/v1 "
                                  "after 1 attempt(s): Connection refused; is the server running?"]
    clean(proc.stderr + the_result(tmp_path)["reason"])
    assert took < STARTUP_S + 10 and tree_bytes(sample_copy) == before


def test_sigterm_stops_a_bench_whose_workers_are_in_calls(tmp_path, sample_copy):
    config(tmp_path)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task_id": str(n), "question": QUESTION, "level": "easy", "answer": "x"})
                             + "\n" for n in range(1, 4)))
    out_file = tmp_path / "results.jsonl"
    with FakeOpenAIServer(respond, faults=["hang"] * 10) as server:
        command = [sys.executable, "-m", "dsstar_cli", "bench", str(tasks), "--data", str(sample_copy), "--workers",
                   "2", "--out", str(out_file), "--model", "openai/fake", "--api-base", server.base_url]
        proc = subprocess.Popen(command, cwd=tmp_path, env=cli_env(tmp_path), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        wait_for(lambda: len(server.requests) >= 2)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    assert proc.returncode == 143 and took < 3 + 2, err
    assert lines(err)[-1] == f"dsstar bench: interrupted; rerun with --out {out_file} --resume to run the rest"
    clean(err)
    assert {json.loads(line)["outcome"] for line in out_file.read_text().splitlines()} == {"interrupted"}


def test_an_embedding_server_that_drips_falls_back_to_bm25_in_bounded_time(tmp_path):
    from dsstar_cli.analyzer import FileDescription
    from dsstar_cli.analyzer.retriever import litellm_embedder, select_files

    files = [FileDescription(f"state_{i}.csv", "csv", 10, "builtin", f"counts of theft in state {i} " * 20)
             for i in range(30)]
    with FakeOpenAIServer(respond, faults=["drip"] * 5) as server:
        started = time.monotonic()
        embed = litellm_embedder("openai/embedder", server.base_url, timeout_s=2)
        chosen = select_files(files, "theft in state 17", max_files=5, max_tokens=10_000, embed=embed)
        took = time.monotonic() - started
    assert chosen.method == "bm25" and "CallTimedOut" in chosen.note, chosen.note
    assert chosen.described[0].path == "state_17.csv"
    assert took < 2 + STARTUP_S / 2, took   # one request's wall-clock bound, not the drip's forever
    assert len(server.requests) == 1
