"""`dsstar` as a user runs it: a real subprocess, a real OpenAI-compatible server on 127.0.0.1,
the real litellm path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLE_DATA, tree_bytes
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond

SECRET = "sk-test-do-not-leak-0123456789"
REPO = SAMPLE_DATA.parent.resolve()


def cli_env(cwd: Path, **extra: str) -> dict[str, str]:
    """The environment a test's dsstar process gets: no API keys or DSSTAR_MODEL from the caller,
    config, cache and data folders of its own under `cwd` (the data dir takes run folders that
    cannot go under run_dir), and a temp dir of its own: the last fallback for run folders is
    dsstar-UID in the temp dir, which `dsstar runs` lists, so a shared /tmp would let one test's
    runs appear in another's history."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "DSSTAR_MODEL"}
    # (Not made where the caller names a temp dir, nor in the checkout: `schema` run there writes nothing.)
    if "TMPDIR" not in extra and cwd.resolve() != REPO:
        (cwd / "xdg-tmp").mkdir(parents=True, exist_ok=True)
    env.update({"XDG_CONFIG_HOME": str(cwd / "xdg"), "XDG_CACHE_HOME": str(cwd / "xdg-cache"),
                "XDG_DATA_HOME": str(cwd / "xdg-data"), "TMPDIR": str(cwd / "xdg-tmp"), "NO_COLOR": "1"}, **extra)
    return env


def dsstar(*args: str, cwd: Path, env_extra: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dsstar_cli", *args], cwd=cwd, env=cli_env(cwd, **(env_extra or {})),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond) as running:
        yield running


def test_ask_json_end_to_end_through_litellm(server, tmp_path):
    before = tree_bytes(SAMPLE_DATA)
    proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--model", "openai/fake-model",
                  "--api-base", server.base_url, cwd=tmp_path, env_extra={"OPENAI_API_KEY": SECRET})
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)  # Exactly one JSON object and nothing else on stdout.
    assert result["answer"] == "Golden Gate Gaming"
    assert (result["outcome"], result["verified"], result["rounds"], result["exit_code"]) == ("verified", True, 2, 0)
    for key in ("question", "plan", "final_code", "usage", "run_dir", "elapsed_s", "files", "history"):
        assert key in result
    assert result["usage"]["total"]["calls"] == 8 and result["usage"]["total"]["input_tokens"] > 0
    # Every call starts with the run's shared context: the server's prefix cache serves it after the first.
    assert 0 < result["usage"]["total"]["cached_input_tokens"] < result["usage"]["total"]["input_tokens"]
    assert result["usage"]["total"]["cost_usd"] is None  # An unpriced model's cost is unknown, not 0.
    assert {f["path"] for f in result["files"]} == {"transactions.csv", "merchants.xlsx", "categories.json",
                                                    "business_rules.md"}
    assert tree_bytes(SAMPLE_DATA) == before
    run_dir = Path(result["run_dir"])
    assert run_dir.is_relative_to(tmp_path) and (run_dir / "events.jsonl").stat().st_size > 0
    for path in [*run_dir.rglob("*"), *tmp_path.rglob("*")]:
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in proc.stdout + proc.stderr
    assert server.requests[-1]["model"] == "fake-model"


def test_ask_plain_prints_the_answer_on_stdout_and_progress_on_stderr(server, tmp_path):
    proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--model", "openai/fake", "--api-base", server.base_url,
                  cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Golden Gate Gaming\n"
    assert "round 2/10" in proc.stderr and "verdict: sufficient" in proc.stderr
    assert "\x1b[" not in proc.stderr  # No terminal: plain lines, no escape codes.


def test_ask_quiet_and_jsonl(server, tmp_path):
    quiet = dsstar("ask", str(SAMPLE_DATA), QUESTION, "-q", "--model", "openai/fake", "--api-base",
                   server.base_url, cwd=tmp_path)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "Golden Gate Gaming\n", "")
    lines = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--jsonl", "--fresh", "--model", "openai/fake", "--api-base",
                   server.base_url, cwd=tmp_path).stdout.splitlines()  # (--fresh: not the answer just remembered)
    events = [json.loads(line) for line in lines]
    assert events[0]["event"] == "run_started" and events[-1]["event"] == "answer"
    assert {"plan", "code", "execution", "verdict", "route"} <= {e["event"] for e in events}


def test_round_cap_from_flag_exits_3(tmp_path):
    def never_satisfied(role, messages):
        return "No" if role == "verifier" else respond(role, messages)

    with FakeOpenAIServer(never_satisfied) as srv:
        proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--max-rounds", "2", "--model", "openai/fake",
                      "--api-base", srv.base_url, cwd=tmp_path)
    result = json.loads(proc.stdout)
    assert proc.returncode == 3 and result["outcome"] == "unverified" and result["rounds"] == 2
    assert result["answer"] == "Golden Gate Gaming"


@pytest.mark.parametrize("args, code, message", [
    (["ask", "does-not-exist", "q?", "--model", "openai/x"], 6, "does not exist"),
    (["ask", "empty", "q?", "--model", "openai/x"], 6, "has no data files"),
    (["ask", "afile.csv", "q?", "--model", "openai/x"], 6, "is a file, not a folder"),
    (["ask", str(SAMPLE_DATA), "   ", "--model", "openai/x"], 2, "the question is empty"),
    (["ask", str(SAMPLE_DATA), "q?"], 4, "no model configured"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/gpt-4.1"], 4, "set the environment variable OPENAI_API_KEY"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "anthropic/claude-sonnet-4-5"], 4, "ANTHROPIC_API_KEY"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "nosuchprovider/model-x"], 4, "unknown model"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--max-rounds", "0"], 2, "--max-rounds"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--config", "bad.yaml"], 4, "not valid YAML"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--config", "typo.yaml"], 4, "unknown key `max_round`"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--config", "wrongtype.yaml"], 4, "`max_rounds` must be a whole number"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--config", "missing.yaml"], 4, "does not exist"),
    (["ask", "bare", "q?", "--model", "openai/x"], 6, "has no data files"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--max-rounds", "-3"], 2, "between 1 and 1000"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--max-rounds", "100000"], 2, "between 1 and 1000"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--code-timeout", "0"], 2, "`code_timeout_s` must be"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--llm-timeout", "-1"], 2, "`llm.timeout_s` must be"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--timeout", "0"], 2, "`budget.timeout_s` must be"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--max-cost", "-1"], 2, "`budget.max_cost_usd` must"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--config", "badmode.yaml"], 4, "`analyzer.mode` must be"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--config", "nested.yaml"], 4,
     "did you mean `retriever.max_files`"),
    (["ask", str(SAMPLE_DATA), "--questions", "q.jsonl", "--workers", "0", "--model", "openai/x"], 2,
     "--workers must be at least 1"),
    (["bench", "q.jsonl", "--model", "openai/x"], 2, "--data DIR"),
    (["resume", "nowhere"], 2, "is not a run folder"),
    (["ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--config", "weak.yaml", "--api-base",
      "http://127.0.0.1:9/v1"], 4, "sandbox.require is 'strong'"),
])
def test_bad_input_gets_one_clear_line_and_its_exit_code(tmp_path, args, code, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / ".hidden").write_text("x")
    (tmp_path / "afile.csv").write_text("a,b\n1,2\n")
    (tmp_path / "bad.yaml").write_text("max_rounds: [1,\n")
    (tmp_path / "typo.yaml").write_text("max_round: 3\n")
    (tmp_path / "wrongtype.yaml").write_text("max_rounds: three\n")
    (tmp_path / "bare").mkdir()
    (tmp_path / "weak.yaml").write_text("sandbox:\n  tier: basic\n  require: strong\n")
    (tmp_path / "badmode.yaml").write_text("analyzer:\n  mode: magic\n")
    (tmp_path / "nested.yaml").write_text("retriever:\n  max_file: 5\n")
    (tmp_path / "q.jsonl").write_text('{"task_id": "1", "question": "q?"}\n')
    proc = dsstar(*args, cwd=tmp_path)
    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) <= 3


def test_errors_with_json_still_print_one_json_object(tmp_path):
    proc = dsstar("ask", "nowhere", "q?", "--json", "--model", "openai/x", cwd=tmp_path)
    result = json.loads(proc.stdout)
    assert proc.returncode == 6 and result["outcome"] == "error" and result["error"]["kind"] == "data_folder"


def test_unreachable_api_base_fails_with_exit_5(tmp_path):
    proc = dsstar("ask", str(SAMPLE_DATA), "q?", "--json", "--model", "openai/x", "--api-base",
                  "http://127.0.0.1:9/v1", "--llm-timeout", "2", cwd=tmp_path, timeout=180)
    result = json.loads(proc.stdout)
    assert proc.returncode == 5 and result["outcome"] == "failed" and "cannot reach" in result["reason"]


def test_describe_json_needs_no_model(tmp_path):
    proc = dsstar("describe", str(SAMPLE_DATA), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    files = {f["path"]: f for f in json.loads(proc.stdout)["files"]}
    assert files["merchants.xlsx"]["format"] == "excel" and "fx_rates" in files["merchants.xlsx"]["description"]


def test_version_and_module_entry_point(tmp_path):
    assert dsstar("--version", cwd=tmp_path).stdout.strip().startswith("dsstar ")
