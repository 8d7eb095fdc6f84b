"""Faults from the model, the user and the machine, end to end: a real `dsstar` process, litellm,
and a local server that misbehaves on purpose. Each test checks the outcome, how many requests
were made, and that the run folder is complete."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SAMPLE_DATA, tree_bytes
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import cli_env, dsstar

SECRET_KEY = "sk-hostile-run-secret-5551234"
FAST_RETRIES = "llm:\n  retries: 4\n  retry_max_delay_s: 1\n"


def ask(server, tmp_path: Path, *extra: str, config: str = FAST_RETRIES, model: str = "openai/fake"):
    (tmp_path / "dsstar.yaml").write_text(config)
    return dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--model", model, "--api-base", server.base_url,
                  *extra, cwd=tmp_path)


def run_folder_is_complete(result: dict) -> Path:
    run_dir = Path(result["run_dir"])
    assert (run_dir / "result.json").exists() and (run_dir / "events.jsonl").exists()
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        json.loads(line)  # Every journal line is whole.
    return run_dir


def test_429_then_500_then_non_json_then_a_proper_answer(tmp_path):
    with FakeOpenAIServer(respond, faults=["429", "500", "nonjson"]) as server:
        started = time.monotonic()
        proc = ask(server, tmp_path)
        took = time.monotonic() - started
    result = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert result["answer"] == "Golden Gate Gaming" and result["outcome"] == "verified"
    assert len(server.requests) == 3 + 8        # three failed attempts, then the usual 8 calls
    assert result["usage"]["total"]["calls"] == 8  # failed attempts are not counted as calls
    assert took >= 1.0                          # Retry-After: 1 was honoured
    run_folder_is_complete(result)


@pytest.mark.parametrize("fault", ["empty", "cut"])
def test_an_empty_or_cut_reply_is_survived(tmp_path, fault):
    with FakeOpenAIServer(respond, faults=[fault]) as server:
        proc = ask(server, tmp_path)
    result = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert result["answer"] == "Golden Gate Gaming"
    # empty: a malformed reply, re-asked once with a reminder; cut: a broken response, retried.
    assert len(server.requests) == 9
    run_folder_is_complete(result)


def test_a_server_that_never_answers_fails_clearly_within_a_bounded_time(tmp_path):
    with FakeOpenAIServer(respond, faults=["hang"] * 10) as server:
        started = time.monotonic()
        proc = ask(server, tmp_path, "--llm-timeout", "2", config="llm:\n  retries: 2\n  retry_max_delay_s: 1\n")
        took = time.monotonic() - started
    result = json.loads(proc.stdout)
    assert proc.returncode == 5 and result["outcome"] == "failed" and result["error_kind"] == "model_unreachable"
    assert "did not answer in time after 2 attempt(s)" in result["reason"] and "--llm-timeout" in result["reason"]
    assert len(server.requests) == 2 and took < 20
    run_folder_is_complete(result)


def test_a_prompt_over_the_context_window_is_shrunk_once_and_recorded(tmp_path):
    # Below the planner's and coder's whole prompts (they hold every table), above any role's prompt
    # with its longest message halved (the finalizer's holds its instructions and the tables it reads).
    with FakeOpenAIServer(respond, context_limit=8_000) as server:
        proc = ask(server, tmp_path)
    result = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    run_dir = run_folder_is_complete(result)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    shrunk = [e for e in events if e["event"] == "context_shrunk"]
    assert shrunk and all(e["chars_cut"] > 0 for e in shrunk)
    assert result["answer"] == "Golden Gate Gaming"


def test_time_budget_gives_a_best_effort_answer_and_exit_8(tmp_path):
    never = lambda role, messages: "No" if role == "verifier" else respond(role, messages)  # noqa: E731
    with FakeOpenAIServer(never, delay_s=0.5) as server:
        proc = ask(server, tmp_path, "--timeout", "12")  # From the process's start: imports count too.
    result = json.loads(proc.stdout)
    assert proc.returncode == 8 and result["outcome"] == "time_limit" and not result["verified"]
    assert result["answer"] == "Golden Gate Gaming" and "time budget (12 s, --timeout)" in result["reason"]
    assert result["rounds"] < 10 and result["elapsed_s"]["total"] < 12 + 3  # The finalizer's short grace.
    run_folder_is_complete(result)


def test_cost_budget_gives_a_best_effort_answer_and_exit_7(tmp_path):
    never = lambda role, messages: "No" if role == "verifier" else respond(role, messages)  # noqa: E731
    with FakeOpenAIServer(never) as server:  # gpt-4o-mini is in litellm's price map: calls have a cost.
        proc = ask(server, tmp_path, "--max-cost", "0.001", model="openai/gpt-4o-mini")
    result = json.loads(proc.stdout)
    assert proc.returncode == 7, proc.stderr
    assert result["outcome"] == "cost_limit" and result["answer"] == "Golden Gate Gaming"
    assert result["usage"]["total"]["cost_usd"] >= 0.001 and "--max-cost" in result["reason"]
    assert result["rounds"] < 10


def test_cost_budget_needs_a_priced_model(tmp_path):
    with FakeOpenAIServer(respond) as server:
        proc = ask(server, tmp_path, "--max-cost", "1")
    assert proc.returncode == 2 and "--max-cost needs a model with a price" in proc.stderr
    assert json.loads(proc.stdout)["outcome"] == "error" and not server.requests


def start_ask(server, tmp_path: Path) -> subprocess.Popen:
    env = cli_env(tmp_path)
    return subprocess.Popen([sys.executable, "-m", "dsstar_cli", "ask", str(SAMPLE_DATA), QUESTION, "--jsonl",
                             "--model", "openai/fake", "--api-base", server.base_url], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def read_until(proc: subprocess.Popen, kind: str) -> list[dict]:
    events = []
    for line in proc.stdout:
        events.append(json.loads(line))
        if events[-1]["event"] == kind:
            return events
    raise AssertionError(f"no {kind} event: {proc.stderr.read()}")


def test_sigkill_mid_run_then_resume_finishes_it(tmp_path):
    before = tree_bytes(SAMPLE_DATA)
    with FakeOpenAIServer(respond, delay_s=0.3) as server:
        proc = start_ask(server, tmp_path)
        events = read_until(proc, "verdict")          # Round 1 is complete (and checkpointed)...
        read_until(proc, "call_started")              # ...and round 2's router call is in flight.
        proc.kill()
        proc.wait()
        run_dir = Path(events[0]["run_dir"])
        assert not (run_dir / "result.json").exists()
        calls_before = len(server.requests)
        resumed = dsstar("resume", str(run_dir), "--json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["answer"] == "Golden Gate Gaming" and result["outcome"] == "verified" and result["rounds"] == 2
    assert result["run_dir"] == str(run_dir)
    assert len(server.requests) - calls_before == 5   # router, planner, coder, verifier, finalizer: round 1 kept
    assert result["usage"]["total"]["calls"] >= 8      # the calls before the kill still count
    journal = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["event"] for e in journal].count("run_started") == 2 and any(e["event"] == "resumed" for e in journal)
    assert tree_bytes(SAMPLE_DATA) == before


def test_ctrl_c_exits_130_naming_the_run_folder_and_resume_finishes_it(tmp_path):
    with FakeOpenAIServer(respond, delay_s=0.3) as server:
        env = cli_env(tmp_path)
        proc = subprocess.Popen([sys.executable, "-m", "dsstar_cli", "ask", str(SAMPLE_DATA), QUESTION, "--json",
                                 "--model", "openai/fake", "--api-base", server.base_url], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while len(server.requests) < 5 and time.monotonic() < deadline:  # Into round 2.
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        interrupted = json.loads(out)
        assert proc.returncode == 130 and interrupted["outcome"] == "interrupted"
        assert "dsstar resume" in interrupted["reason"] and list(Path(interrupted["run_dir"]).iterdir())
        resumed = dsstar("resume", interrupted["run_dir"], "--json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["answer"] == "Golden Gate Gaming"
    again = dsstar("resume", interrupted["run_dir"], cwd=tmp_path)
    assert again.returncode == 2 and "already finished (verified)" in again.stderr


def test_resume_needs_a_run_folder_with_a_checkpoint(tmp_path):
    (tmp_path / "empty-run").mkdir()
    (tmp_path / "empty-run" / "events.jsonl").write_text("")  # Started, stopped before round 1 ended.
    missing = dsstar("resume", str(tmp_path / "nope"), cwd=tmp_path)
    assert missing.returncode == 2 and "is not a run folder" in missing.stderr
    early = dsstar("resume", str(tmp_path / "empty-run"), cwd=tmp_path)
    assert early.returncode == 2 and "has no checkpoint" in early.stderr and "Traceback" not in early.stderr


def test_a_full_disk_while_writing_the_run_folder_is_one_clear_error(tmp_path):
    """RLIMIT_FSIZE makes writes past 3 KB fail (Python turns SIGXFSZ into an OSError): the same path a
    full disk takes through the run folder's writes."""
    import resource

    def limit_file_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))

    env = cli_env(tmp_path)
    with FakeOpenAIServer(respond) as server:
        proc = subprocess.run([sys.executable, "-m", "dsstar_cli", "ask", str(SAMPLE_DATA), QUESTION, "--json",
                               "--no-cache", "--model", "openai/fake", "--api-base", server.base_url], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120, preexec_fn=limit_file_size)
    assert proc.returncode == 4, proc.stderr
    assert "cannot write the run folder" in proc.stderr and "free some disk space" in proc.stderr
    assert "Traceback" not in proc.stderr and json.loads(proc.stdout)["outcome"] == "error"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any folder, so permission cannot be denied")
def test_an_unreadable_folder_is_a_data_folder_error(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "a.csv").write_text("x\n1\n")
    folder.chmod(0)
    try:
        proc = dsstar("ask", str(folder), "q?", "--model", "openai/x", cwd=tmp_path)
    finally:
        folder.chmod(0o755)
    assert proc.returncode == 6 and "cannot be read" in proc.stderr


def test_ctrl_c_in_a_batch_stops_the_workers_and_a_rerun_asks_the_rest(tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": f"q{i}", "question": QUESTION}) + "\n" for i in range(4)))
    out = tmp_path / "answers.jsonl"
    env = cli_env(tmp_path)
    argv = [sys.executable, "-m", "dsstar_cli", "ask", str(SAMPLE_DATA), "--questions", str(questions), "--workers",
            "2", "--out", str(out)]
    with FakeOpenAIServer(respond, delay_s=0.3) as server:
        proc = subprocess.Popen(argv + ["--model", "openai/fake", "--api-base", server.base_url], cwd=tmp_path,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while len(server.requests) < 4 and time.monotonic() < deadline:  # Both workers are mid-question.
            time.sleep(0.05)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130 and "rerun with the same --out" in err and time.monotonic() - started < 10
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert {line["outcome"] for line in lines} == {"interrupted"} and len(lines) == 2
        rerun = subprocess.run(argv + ["--model", "openai/fake", "--api-base", server.base_url], cwd=tmp_path,
                               env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    final = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(line["id"] for line in final if line["outcome"] == "verified") == ["q0", "q1", "q2", "q3"]


def hostile(port: int):
    """A model whose coder writes attacks: read the key, reach the local model server, change the
    data, and (in the finalizer) loop forever."""
    attack = (
        "import os, socket\n"
        "print('env key:', os.environ.get('OPENAI_API_KEY'))\n"
        "cli = open(f'/proc/{os.getppid()}/stat').read().rsplit(')', 1)[1].split()[1]\n"
        "for pid in (os.getppid(), int(cli)):\n"
        "    try:\n        print('environ', pid, open(f'/proc/{pid}/environ', 'rb').read()[:4000])\n"
        "    except OSError as e:\n        print('environ refused', e)\n"
        f"try:\n    s = socket.socket(); s.settimeout(2); s.connect(('127.0.0.1', {port}))\n"
        "    print('CONNECTED to the model server')\n"
        "except OSError as e:\n    print('connect refused', e)\n"
        "for name in os.listdir(DATA):\n"
        "    try:\n        open(os.path.join(DATA, name), 'a').write('pwned')\n"
        "    except OSError as e:\n        print('write refused', e)\n"
        "print('total', 42)\n")

    def respond_hostile(role, messages):
        data = re.search(r'DATA_DIR = "([^"]+)"|folder: ([^)]+)\)', "\n".join(m["content"] for m in messages))
        folder = next(g for g in data.groups() if g) if data else "."
        if role == "planner":
            return "Compute the total."
        if role in ("coder", "debugger"):
            return f"```python\nDATA = {folder!r}\n{attack}```"
        if role == "verifier":
            return "Yes"
        if role == "finalizer":
            return "```python\nwhile True:\n    pass\n```"
        return "Add Step"

    return respond_hostile


def test_a_run_with_hostile_code_is_contained_end_to_end(tmp_path, sample_copy):
    before = tree_bytes(sample_copy)
    with FakeOpenAIServer(lambda role, messages: "", delay_s=0) as server:
        port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
        server.responder = hostile(port)
        started = time.monotonic()
        proc = dsstar("ask", str(sample_copy), "What is the total?", "--json", "--code-timeout", "2",
                      "--model", "openai/fake", "--api-base", server.base_url, cwd=tmp_path,
                      env_extra={"OPENAI_API_KEY": SECRET_KEY})
        took = time.monotonic() - started
    result = json.loads(proc.stdout)
    assert tree_bytes(sample_copy) == before                     # byte-identical
    assert result["outcome"] in ("verified", "failed") and proc.returncode == result["exit_code"]  # a result
    run_dir = run_folder_is_complete(result)
    everything = proc.stdout + proc.stderr + "".join(
        p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file())
    assert SECRET_KEY not in everything                           # never shown anywhere
    finals = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    printed = "".join(e["stdout"] for e in finals if e["event"] == "execution")
    assert "CONNECTED" not in printed and "connect refused" in printed  # cannot reach a local port
    assert "env key: None" in printed and "write refused" in printed
    loop = [e for e in finals if e["event"] == "execution" and e["purpose"] == "final"]
    assert loop[0]["timed_out"] and 1.9 < loop[0]["seconds"] < 4  # the infinite loop ends in about 2 s
    assert result["sandbox"]["level"] in ("strong", "medium") and took < 60
