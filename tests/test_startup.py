"""Start-up: the header is out before litellm is loaded, the model check runs beside the run's
start, and a check that fails after the header still ends as one line, with nothing left behind.
(The times themselves are in benchmarks/startup_bench.py and loop_overhead_bench.py.)"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time

from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import cli_env, dsstar


def test_the_header_is_out_before_litellm_is_imported(tmp_path):
    """`-X importtime` writes a line to stderr as each import ends, in order with dsstar's own lines:
    the question line comes first, litellm's import after it, and the run still answers."""
    with FakeOpenAIServer(respond) as server:
        proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--model", "openai/fake", "--api-base", server.base_url,
                      cwd=tmp_path, env_extra={"PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("dsstar: question:"))
    litellm = next(i for i, line in enumerate(lines) if line.startswith("import time:") and line.endswith("| litellm"))
    assert header < litellm
    assert proc.stdout.strip() == "Golden Gate Gaming"


def test_a_missing_key_found_after_the_header_is_one_line_and_leaves_no_run_folder(tmp_path):
    proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--model", "openai/gpt-4.1", cwd=tmp_path)
    assert proc.returncode == 4
    lines = proc.stderr.strip().splitlines()
    # The question, then nothing the run said (not even the folder it discarded): the error line.
    assert lines[0].startswith("dsstar: question:")
    assert len(lines) == 2 and "set the environment variable OPENAI_API_KEY" in lines[1]
    runs = tmp_path / "xdg-data" / "dsstar" / "runs"
    assert not runs.exists() or not any(runs.iterdir())
    listed = dsstar("runs", "--json", cwd=tmp_path)
    assert listed.returncode == 0 and json.loads(listed.stdout) == {"runs": []}


def test_an_unknown_model_with_json_is_one_error_object(tmp_path):
    proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--model", "nosuchprovider/model-x", cwd=tmp_path)
    assert proc.returncode == 4
    error = json.loads(proc.stdout)
    assert error["outcome"] == "error" and "unknown model" in error["error"]["message"]


def test_ctrl_c_while_the_model_check_runs_exits_at_once(tmp_path):
    """Ctrl-C while litellm's import runs on the check's thread (its first module is in): the run
    ends as interrupted without waiting for that import (seconds) to finish."""
    with FakeOpenAIServer(respond) as server:
        proc = subprocess.Popen([sys.executable, "-m", "dsstar_cli", "ask", str(SAMPLE_DATA), QUESTION, "--model",
                                 "openai/fake", "--api-base", server.base_url], cwd=tmp_path,
                                env=cli_env(tmp_path, PYTHONPROFILEIMPORTTIME="1"),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = iter(proc.stderr.readline, "")  # Import timings and dsstar's lines, in order.
        first = next(line for line in lines if line.startswith("dsstar: "))
        next(line for line in lines if re.match(r"import time:.*\|\s+litellm\.", line))
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    assert first.startswith("dsstar: question:")
    assert proc.returncode == 130 and "interrupted" in rest and "Traceback" not in rest
    assert took < 10, took
    # Not after litellm's import ended: -X importtime would have written its line by then.
    assert not any(line.startswith("import time:") and line.rstrip().endswith("| litellm") for line in rest.splitlines())
    assert not server.requests
