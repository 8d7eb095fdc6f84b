"""Control sequences from file names, script output and model replies never reach a terminal raw:
not through the plain lines, not through the live view (run under a real pseudo-terminal), not
through the answer on a terminal's stdout."""

from __future__ import annotations

import io
import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import cli_env, dsstar

from dsstar_cli.display import PlainDisplay
from dsstar_cli.events import Event
from dsstar_cli.terminal import terminal_safe, visible

CLIPBOARD = "\x1b]52;c;cHduZWQ=\x07"   # OSC 52: write the clipboard
TITLE = "\x1b]0;pwned\x07"             # OSC 0: set the window title
CLEAR = "\x1b[2J"                      # CSI 2J: clear the screen
RLO = "\u202e"                         # right-to-left override
HOSTILE = (CLIPBOARD, TITLE, CLEAR, RLO)


def test_visible_escapes_controls_and_overrides_but_keeps_text():
    assert visible(f"a{CLEAR}b") == "a\\x1b[2Jb"
    assert visible(f"evil{RLO}gpj.csv") == "evil\\u202egpj.csv"
    assert visible("x\ry\x00z\x9b") == "x\\x0dy\\x00z\\x9b"
    assert visible("line 1\n\tline 2 é 中 ✓") == "line 1\n\tline 2 é 中 ✓"


def test_plain_lines_show_hostile_names_escaped():
    stream = io.StringIO()
    terminal_safe(PlainDisplay(stream))(Event("file_described", {"path": f"evil{TITLE}{RLO}gpj.csv", "format": "csv",
                                                                 "method": "builtin", "error": CLEAR}))
    shown = stream.getvalue()
    assert "\x1b" not in shown and RLO not in shown and "evil\\x1b]0;pwned\\x07\\u202egpj.csv" in shown


def hostile_folder(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DATA, data)
    (data / f"notes{TITLE}{RLO}gpj.csv").write_text(f"a,b\n1,{CLEAR}\n")
    return data


def hostile(role: str, messages: list[dict]) -> str:
    """The sample agent, with every script and reply also printing the hostile sequences."""
    reply = respond(role, messages)
    noise = "print(" + repr("".join(HOSTILE)) + ")\n"
    if "```python\n" in reply:
        return reply.replace("```python\n", "```python\n" + noise, 1)
    return reply + "".join(HOSTILE)


def test_plain_run_prints_no_control_sequence(tmp_path):
    data = hostile_folder(tmp_path)
    with FakeOpenAIServer(hostile) as server:
        proc = dsstar("ask", str(data), QUESTION, "--model", "openai/fake", "--api-base", server.base_url, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for sequence in HOSTILE:
        assert sequence not in proc.stderr
    assert "\\x1b]52;c;" in proc.stderr  # Shown, as text.


def run_in_terminal(argv: list[str], cwd: Path, env: dict, timeout: float = 120) -> str:
    """Everything `argv` wrote to a pseudo-terminal (its stdout and stderr), as text."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    return read_terminal(leader, proc, timeout).decode("utf-8", errors="replace")


def read_terminal(leader: int, proc: subprocess.Popen, timeout: float) -> bytes:
    """What `proc` wrote to the pseudo-terminal whose `leader` end we hold, until it ends (or
    `timeout`); then the process is gone and the terminal closed."""
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # The terminal closed: the process is gone.
                break
            if not chunk:
                break
            chunks.append(chunk)
        elif proc.poll() is not None:
            break
    proc.kill()
    proc.wait()
    os.close(leader)
    return b"".join(chunks)


def test_live_view_and_answer_on_a_terminal_print_no_control_sequence(tmp_path):
    data = hostile_folder(tmp_path)
    env = {k: v for k, v in cli_env(tmp_path).items() if k != "NO_COLOR"}
    env.update(TERM="xterm-256color", COLUMNS="120", LINES="40")
    with FakeOpenAIServer(hostile) as server:
        shown = run_in_terminal([sys.executable, "-m", "dsstar_cli", "ask", str(data), QUESTION, "--model",
                                 "openai/fake", "--api-base", server.base_url], tmp_path, env)
    assert "Golden Gate Gaming" in shown, shown[-2000:]
    for sequence in HOSTILE:
        assert sequence not in shown


def test_no_color_in_a_terminal_gives_plain_lines_without_cursor_codes(tmp_path):
    env = cli_env(tmp_path)  # NO_COLOR=1, as a user who sets it in their shell.
    env.update(TERM="xterm-256color", COLUMNS="120", LINES="40")
    with FakeOpenAIServer(respond) as server:
        shown = run_in_terminal([sys.executable, "-m", "dsstar_cli", "ask", str(SAMPLE_DATA), QUESTION, "--model",
                                 "openai/fake", "--api-base", server.base_url], tmp_path, env)
    assert "Golden Gate Gaming" in shown and "dsstar: round 2/10" in shown, shown[-2000:]
    assert "\x1b[" not in shown
