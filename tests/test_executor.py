"""The executor: separate process, clean environment, deadline, capped output, data integrity."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from dsstar_cli.errors import StopRequest, Terminated
from dsstar_cli.sandbox import Executor
from dsstar_cli.sandbox.worker_client import WarmWorker


@pytest.fixture(params=["warm", "cold"])
def executor(tmp_path: Path, request) -> Executor:
    """The basic tier, so what the integrity check alone catches is tested (tests/security covers
    every tier); both the warm worker and the cold subprocess path."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "d.csv").write_text("a\n1\n")
    running = Executor(tmp_path / "work", data, timeout_s=5, memory_mb=1024, max_output_bytes=10_000,
                       tier="basic", warm=request.param == "warm")
    yield running
    running.close()


def test_runs_in_the_work_folder_and_captures_output(executor):
    result = executor.run("import os\nprint(os.getcwd())\nimport sys\nprint('err', file=sys.stderr)", "s1")
    assert result.ok and result.exit_code == 0
    assert result.stdout.strip() == str(executor.workdir) and result.stderr.strip() == "err"
    assert (executor.scripts_dir / "s1.py").exists() and not (executor.workdir / "s1.py").exists()


def test_failure_keeps_the_traceback(executor):
    result = executor.run("x = 1\nraise KeyError('col')", "s2")
    assert not result.ok and result.exit_code == 1 and "KeyError: 'col'" in result.failure()


def test_api_keys_never_reach_the_script(executor, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-abcdef123456")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-secret-abcdef123456")
    result = executor.run("import os\nprint(sorted(os.environ))\nprint(open('/proc/self/environ','rb').read())", "s3")
    assert result.ok and "secret" not in result.stdout and "OPENAI_API_KEY" not in result.stdout


def test_deadline_kills_the_whole_process_group(executor):
    executor.timeout_s = 1.5
    code = ("import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('started', flush=True)\nwhile True: pass")
    started = time.monotonic()
    result = executor.run(code, "s4")
    assert time.monotonic() - started < 6
    assert result.timed_out and not result.ok and "time limit" in result.failure()
    assert result.stdout.strip() == "started"


def test_output_is_capped_with_a_marker(executor):
    result = executor.run("print('x' * 5_000_000)", "s5")
    assert result.ok and len(result.stdout) < 11_000 and "output truncated by dsstar" in result.stdout


def test_memory_limit_turns_a_huge_allocation_into_an_error(executor):
    result = executor.run("b = bytearray(50 * 1024**3)", "s6")
    assert not result.ok and "MemoryError" in result.stderr


def test_exit_codes_are_reported(executor):
    assert executor.run("import sys; sys.exit(3)", "s7").exit_code == 3
    assert executor.run("import os; os._exit(0)", "s8").ok


def test_any_change_to_the_data_folder_fails_the_step(executor):
    result = executor.run(f"open(r'{executor.data_dir}/new.csv', 'w').write('x')", "s9")
    assert not result.ok and result.data_changed == ["new.csv"]
    assert "changed the read-only data folder" in result.failure()


def test_a_stop_requested_before_the_script_is_sent_means_it_never_runs(executor):
    """A batch's stop request that is already set when a script's turn comes (the worker still
    starting, or between steps): the stop's signal, and the script never ran."""
    stop = StopRequest()
    stop.request(Terminated())
    with pytest.raises(Terminated):
        executor.run("open('ran.txt', 'w').write('x')\nimport time\ntime.sleep(60)", "s10", stop=stop)
    time.sleep(0.5)  # Had it been sent, a started script would have written by now.
    assert not (executor.workdir / "ran.txt").exists()


def test_a_kill_that_arrives_with_the_script_in_one_read_kills_it(tmp_path):
    """The worker's protocol: a stop sent right behind a script can reach the worker in the same
    read as the script itself. It is for that script, not a late one for the last: the script is
    killed at once, not left to run out its 60 s while the executor waits."""
    work = tmp_path / "work"
    work.mkdir()
    worker = WarmWorker("basic", work, [], tmp_path / "worker.log")
    try:
        worker._await_ready()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request = {"code": "import time\ntime.sleep(60)", "filename": "s.py", "workdir": str(work),
                   "limits": {}, "uid": None, "duckdb": None}
        socket.send_fds(worker.sock, [json.dumps(request).encode() + b'\n{"kill": true}\n'], [out_w, err_w])
        for fd in (out_w, err_w, out_r, err_r):
            os.close(fd)
        worker.sock.settimeout(15)
        started = time.monotonic()
        replies = [worker._read(), worker._read()]
        assert "pid" in replies[0] and "status" in replies[1]
        assert os.WIFSIGNALED(replies[1]["status"]) and time.monotonic() - started < 10
    finally:
        worker._kill()
