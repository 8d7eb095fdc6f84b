"""What the command line says and takes, as a user meets it: a question from a pipe, `doctor`
saying what it found, a batch's history holding only its questions' runs, and no run folder named
that does not exist. The CLI in a subprocess, against the fake OpenAI-compatible server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import cli_env, dsstar


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond) as running:
        yield running


def piped(*args: str, stdin: str, cwd: Path) -> subprocess.CompletedProcess:
    """`echo ... | dsstar ARGS`: stdin a pipe holding `stdin`."""
    return subprocess.run([sys.executable, "-m", "dsstar_cli", *args], cwd=cwd, env=cli_env(cwd), input=stdin,
                          capture_output=True, text=True, timeout=120)


# -- a question from stdin ----------------------------------------------------------------------

@pytest.mark.parametrize("dash", [[], ["-"]], ids=["no QUESTION", "QUESTION -"])
def test_the_question_comes_from_a_pipe(server, tmp_path, dash):
    proc = piped("ask", str(SAMPLE_DATA), *dash, "--json", "--model", "openai/fake", "--api-base", server.base_url,
                 stdin=QUESTION + "\n", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert (result["question"], result["answer"]) == (QUESTION, "Golden Gate Gaming")


@pytest.mark.parametrize("dash", [[], ["-"]], ids=["no QUESTION", "QUESTION -"])
def test_an_empty_stdin_is_a_clear_error(tmp_path, dash):
    proc = piped("ask", str(SAMPLE_DATA), *dash, "--model", "openai/fake", "--api-base", "http://127.0.0.1:9/v1",
                 stdin=" \n", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("dsstar: error: ") and "stdin" in proc.stderr and "empty" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_a_piped_question_and_a_questions_file_are_one_too_many(tmp_path):
    (tmp_path / "q.txt").write_text("How many rows?\n")
    proc = piped("ask", str(SAMPLE_DATA), "-", "--questions", "q.txt", "--model", "openai/fake", stdin="q?\n",
                 cwd=tmp_path)
    assert proc.returncode == 2 and "either a QUESTION or --questions FILE" in proc.stderr


def test_a_dry_run_takes_the_question_from_a_pipe_too(tmp_path):
    proc = piped("ask", str(SAMPLE_DATA), "--dry-run", "--json", "--model", "openai/fake", stdin="How many rows?\n",
                 cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["question"] == "How many rows?"


# -- doctor says what it found ------------------------------------------------------------------

def _credentials_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if "credentials" in line)


def test_doctor_with_no_key_for_a_custom_server_says_there_is_none(server, tmp_path):
    proc = dsstar("doctor", "--model", "openai/fake", "--api-base", server.base_url, cwd=tmp_path)
    line = _credentials_line(proc.stdout)
    assert proc.returncode == 0, proc.stdout
    assert "found in the environment" not in line
    assert line.startswith("ok") and "OPENAI_API_KEY is not set" in line and "no key of yours is sent" in line


def test_doctor_with_a_key_names_the_variable_it_found(server, tmp_path):
    proc = dsstar("doctor", "--model", "openai/fake", "--api-base", server.base_url, cwd=tmp_path,
                  env_extra={"OPENAI_API_KEY": "sk-test-0123456789"})
    line = _credentials_line(proc.stdout)
    assert proc.returncode == 0 and "OPENAI_API_KEY is set" in line and "sk-test" not in proc.stdout


def test_doctor_fails_when_the_server_refuses_a_request_without_a_key(tmp_path):
    with FakeOpenAIServer(respond, require_key=True) as guarded:
        proc = dsstar("doctor", "--model", "openai/fake", "--api-base", guarded.base_url, cwd=tmp_path)
    line = _credentials_line(proc.stdout)
    assert proc.returncode == 4 and line.startswith("FAIL") and "401" in line and "set OPENAI_API_KEY" in line


# -- a batch's history --------------------------------------------------------------------------

def test_a_batch_leaves_one_history_entry_per_question(server, tmp_path):
    (tmp_path / "q.txt").write_text(f"{QUESTION}\n{QUESTION}\n")
    proc = dsstar("ask", str(SAMPLE_DATA), "--questions", "q.txt", "--model", "openai/fake", "--api-base",
                  server.base_url, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    answered = sorted(json.loads(line)["run_dir"] for line in proc.stdout.splitlines())
    listed = json.loads(dsstar("runs", "--json", cwd=tmp_path).stdout)["runs"]
    assert sorted(run["run_dir"] for run in listed) == answered
    assert [run["outcome"] for run in listed] == ["verified", "verified"]
    root = Path(answered[0]).parent
    assert sorted(str(path) for path in root.iterdir()) == answered  # Nothing else left beside them.


# -- no run folder named that does not exist ----------------------------------------------------

@pytest.mark.parametrize("model", ["openai/gpt-4.1", "nosuchprovider/model-x"])
@pytest.mark.parametrize("mode", [[], ["--jsonl"]], ids=["display", "jsonl"])
def test_a_run_that_cannot_start_names_no_run_folder(tmp_path, model, mode):
    proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--model", model, *mode, cwd=tmp_path)
    assert proc.returncode == 4
    named = re.findall(r"runs/\d{8}-\d{6}-[0-9a-f]{6}", proc.stdout + proc.stderr)
    assert named == [], proc.stdout + proc.stderr
    runs = tmp_path / "xdg-data" / "dsstar" / "runs"
    assert not runs.exists() or not any(runs.iterdir())
