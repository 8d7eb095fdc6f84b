"""Control sequences from file names, script output and model replies never reach a terminal raw:
not through the plain lines, not through the live view (run under a real pseudo-terminal), not
through the answer on a terminal's stdout."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
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


def terminal_env(cwd: Path, columns: int = 80, **extra: str) -> dict[str, str]:
    """A test dsstar's environment (cli_env) as a user's colour terminal of `columns` x 40 sets it."""
    env = {k: v for k, v in cli_env(cwd, **extra).items() if k != "NO_COLOR"}
    env.update(TERM="xterm-256color", COLUMNS=str(columns), LINES="40")
    return env


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
    env = terminal_env(tmp_path, columns=120)
    with FakeOpenAIServer(hostile) as server:
        shown = run_in_terminal([sys.executable, "-m", "dsstar_cli", "ask", str(data), QUESTION, "--model",
                                 "openai/fake", "--api-base", server.base_url], tmp_path, env)
    assert "Golden Gate Gaming" in shown, shown[-2000:]
    for sequence in HOSTILE:
        assert sequence not in shown


# Select Graphic Rendition parameters that set a colour: 30-39, 40-49, 90-97, 100-107 (38 and 48 take more).
SGR = re.compile(r"\x1b\[([0-9;]*)m")
COLOUR = {*range(30, 50), *range(90, 98), *range(100, 108)}


def colours(shown: str) -> list[str]:
    return [m.group(0) for m in SGR.finditer(shown)
            if any(p.isdigit() and int(p) in COLOUR for p in m.group(1).split(";"))]


def test_no_color_in_a_terminal_drops_colour_only(tmp_path):
    env = cli_env(tmp_path)  # NO_COLOR=1, as a user who sets it in their shell.
    env.update(TERM="xterm-256color", COLUMNS="80", LINES="40")
    with FakeOpenAIServer(respond) as server:
        shown = run_in_terminal([sys.executable, "-m", "dsstar_cli", "ask", str(SAMPLE_DATA), QUESTION, "--model",
                                 "openai/fake", "--api-base", server.base_url], tmp_path, env)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)  # What is read on the screen (bold stays).
    assert "Golden Gate Gaming" in text, text[-2000:]
    # The live view's layout: the plan panel, each script and its output in panels, the Answer panel.
    assert "╭─ Plan" in text and "solution script · 001-round01-solution.py" in text
    assert "import pandas as pd" in text and "output · ok in" in text and "╭─ Answer" in text
    assert "dsstar: round 2/10" not in text  # Not the plain lines.
    assert colours(shown) == []


def interrupted_in_terminal(argv: list[str], cwd: Path, env: dict, after: bytes,
                            timeout: float = 120) -> tuple[str, int]:
    """Run `argv` on an 80-column pseudo-terminal that is its controlling terminal, and press Ctrl-C
    (the terminal's interrupt character: the line discipline echoes it and signals the process group)
    once `after` has been shown: (everything shown, the terminal's local modes once it exited)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))

    def own_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=follower, stdout=follower, stderr=follower,
                            preexec_fn=own_terminal)
    shown, pressed, deadline = b"", False, time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            shown += chunk
        if not pressed and after in shown:
            os.write(leader, b"\x03")
            pressed = True
        if proc.poll() is not None and not ready:
            break
    proc.kill()
    proc.wait()
    modes = termios.tcgetattr(follower)[3]
    os.close(follower)
    os.close(leader)
    return shown.decode("utf-8", errors="replace"), modes


def screen_line(written: str) -> str:
    """What one line of a terminal shows once `written` (no newline in it) went to it: a carriage
    return goes back to the first column, erase-line empties it, other sequences do not move."""
    cells: list[str] = []
    column = 0
    for token in re.findall(r"\x1b\[[0-9;?]*[A-Za-z]|\r|.", written):
        if token == "\r":
            column = 0
        elif token == "\x1b[2K":
            cells = [" "] * len(cells)
        elif not token.startswith("\x1b"):
            cells[column:column + 1] = [token]
            column += 1
    return "".join(cells).rstrip()


def test_ctrl_c_leaves_the_answer_panels_border_whole(tmp_path):
    env = terminal_env(tmp_path)
    with FakeOpenAIServer(respond, delay_s=2.0) as server:  # Ctrl-C comes while the planner thinks.
        shown, modes = interrupted_in_terminal([sys.executable, "-m", "dsstar_cli", "ask", str(SAMPLE_DATA), QUESTION,
                                                "--model", "openai/fake", "--api-base", server.base_url], tmp_path,
                                               env, after=b"planner: planning")
    assert "INTERRUPTED" in shown, shown[-2000:]
    assert "^C" not in shown  # The echo would land inside the live region, or before the panel's corner.
    corner = shown.rindex("╭")  # The Answer panel's, the last panel.
    written = shown[shown.rindex("\n", 0, corner) + 1:shown.index("\n", corner)]
    top = screen_line(written)
    assert top.startswith("╭─ Answer ") and top.endswith("╮") and len(top) == 80, repr(written)
    assert modes & termios.ECHOCTL  # The terminal's setting is back once dsstar has exited.
