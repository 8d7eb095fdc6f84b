"""The basic tier is a choice, never a silent fallback: on a machine that refuses user namespaces and
has no Landlock (dsstar run under a seccomp filter that refuses `unshare` and Landlock's calls, with
bubblewrap hidden from PATH), `sandbox.tier: auto` ends at basic, and every run says so in one
warning line naming what basic does not contain, in its result and its run folder; doctor says the
same; `sandbox.tier: basic`, set explicitly, silences it. The CLI in a subprocess, against the fake
OpenAI-compatible server."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from security.test_tiers import path_without_bubblewrap
from test_cli import cli_env

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux")
                                or platform.machine() not in ("x86_64", "aarch64"),
                                reason="the filter below knows the system-call numbers of Linux on x86_64 and aarch64")

# Installs a seccomp filter (inherited by everything it starts) that answers ENOSYS to Landlock
# (a kernel without it) and EPERM to unshare (user namespaces refused), then runs Python with the
# arguments given.
WITHOUT_NAMESPACES_OR_LANDLOCK = """
import ctypes, os, platform, struct, sys
UNSHARE = {"x86_64": 272, "aarch64": 97}[platform.machine()]
LANDLOCK_CREATE_RULESET, ENOSYS, EPERM = 444, 38, 1
LOAD_NR, JUMP_IF_EQUAL, RETURN, ERRNO, ALLOW = 0x20, 0x15, 0x06, 0x00050000, 0x7FFF0000
def op(code, k, jt=0, jf=0):
    return struct.pack("=HBBI", code, jt, jf, k)
program = b"".join([op(LOAD_NR, 0), op(JUMP_IF_EQUAL, LANDLOCK_CREATE_RULESET, 0, 1), op(RETURN, ERRNO | ENOSYS),
                    op(JUMP_IF_EQUAL, UNSHARE, 0, 1), op(RETURN, ERRNO | EPERM), op(RETURN, ALLOW)])
class Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
code = ctypes.create_string_buffer(program, len(program))
libc = ctypes.CDLL(None, use_errno=True)
filtered = Program(len(program) // 8, ctypes.addressof(code))
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(filtered), 0, 0):  # no_new_privs, then the filter
    raise SystemExit("seccomp: " + os.strerror(ctypes.get_errno()))
os.execv(sys.executable, [sys.executable] + sys.argv[1:])
"""
NOT_CONTAINED = "a script can read and write whatever you can, reach the network and signal your processes"


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond) as running:
        yield running


def confined_dsstar(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """dsstar on a machine (as far as it can tell) without user namespaces, Landlock or bubblewrap."""
    launcher = cwd / "launch.py"
    launcher.write_text(WITHOUT_NAMESPACES_OR_LANDLOCK)
    return subprocess.run([sys.executable, str(launcher), "-m", "dsstar_cli", *args], cwd=cwd,
                          env=cli_env(cwd, PATH=path_without_bubblewrap()), capture_output=True, text=True,
                          timeout=180, stdin=subprocess.DEVNULL)


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "warning:" in line]


def test_auto_ending_at_basic_warns_on_every_run(server, tmp_path):
    proc = confined_dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--model", "openai/fake",
                           "--api-base", server.base_url, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["sandbox"]["level"] == "basic" and result["answer"] == "Golden Gate Gaming"
    shown = warnings_in(proc.stderr)
    assert len(shown) == 1 and NOT_CONTAINED in shown[0] and "sandbox.tier: basic" in shown[0], proc.stderr
    assert len(result["warnings"]) == 1 and NOT_CONTAINED in result["warnings"][0]
    run_dir = Path(result["run_dir"])
    assert json.loads((run_dir / "result.json").read_text())["warnings"] == result["warnings"]
    journal = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [event["message"] for event in journal if event["event"] == "warning"] == result["warnings"]

    quiet = confined_dsstar("ask", str(SAMPLE_DATA), QUESTION, "--no-progress", "--fresh", "--model", "openai/fake",
                            "--api-base", server.base_url, cwd=tmp_path)  # A warning is not progress.
    assert quiet.returncode == 0 and len(warnings_in(quiet.stderr)) == 1, quiet.stderr


def test_doctor_says_the_same(tmp_path):
    proc = confined_dsstar("doctor", "--model", "openai/fake", "--api-base", "http://127.0.0.1:9/v1", cwd=tmp_path)
    sandbox = [line for line in proc.stdout.splitlines() + proc.stderr.splitlines() if "sandbox" in line]
    assert any("basic" in line and NOT_CONTAINED in line and "sandbox.tier: basic" in line for line in sandbox), \
        proc.stdout + proc.stderr


def test_basic_chosen_explicitly_is_not_warned_about(server, tmp_path):
    (tmp_path / "dsstar.yaml").write_text("sandbox:\n  tier: basic\n")
    proc = confined_dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--model", "openai/fake",
                           "--api-base", server.base_url, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["sandbox"]["level"] == "basic" and result["warnings"] == []
    assert not warnings_in(proc.stderr), proc.stderr
