"""A chart drawn inline where the terminal declares it can show images (kitty's graphics protocol,
iTerm2's inline images), and never an image escape sequence anywhere else: not into a pipe, not
to a terminal that declares nothing, not through a multiplexer. The CLI runs in a subprocess, in
a real pseudo-terminal where display matters, against the fake OpenAI server."""

from __future__ import annotations

import base64
import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from chart_agent import CHART_QUESTION, respond
from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from test_cli import cli_env, dsstar
from test_terminal import read_terminal

KITTY_CHUNK = re.compile(rb"\x1b_G([^;\x1b]*);([A-Za-z0-9+/=]*)\x1b\\")
ITERM2 = re.compile(rb"\x1b\]1337;File=([^:\x07]*):([A-Za-z0-9+/=]*)\x07")
IMAGE_STARTS = (b"\x1b_G", b"\x1b]1337;", b"\x1bP")  # kitty, iTerm2, and a DCS (sixel) of any kind


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond) as running:
        yield running


def in_terminal(args: list[str], cwd: Path, **env_extra: str) -> bytes:
    """What dsstar wrote to an 80-column pseudo-terminal (stdout and stderr both), as bytes."""
    env = {k: v for k, v in cli_env(cwd).items()
           if k not in ("NO_COLOR", "TMUX", "KITTY_WINDOW_ID", "TERM_PROGRAM", "LC_TERMINAL")}
    env.update(COLUMNS="80", LINES="40", **env_extra)
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "dsstar_cli", *args], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    return read_terminal(leader, proc, 120)


def ask_args(server) -> list[str]:
    return ["ask", str(SAMPLE_DATA), CHART_QUESTION, "--model", "openai/fake", "--api-base", server.base_url]


def assert_png(data: bytes) -> None:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(io.BytesIO(data)) as image:
        assert image.width > 100 and image.height > 100


def kitty_images(screen: bytes) -> list[bytes]:
    """Each image a kitty-protocol sequence transmitted: its chunks joined, base64-decoded."""
    images, current = [], b""
    for control, payload in KITTY_CHUNK.findall(screen):
        assert b"q=2" in control  # The terminal is asked not to answer (an answer would land on stdin).
        current += payload
        if b"m=0" in control:
            images.append(base64.b64decode(current))
            current = b""
    return images


def test_a_terminal_that_declares_kitty_gets_the_chart_inline_in_ask_and_runs_show(server, tmp_path):
    screen = in_terminal(ask_args(server), tmp_path, TERM="xterm-kitty")
    images = kitty_images(screen)
    assert len(images) == 1, screen[-3000:]
    assert_png(images[0])
    assert screen.index(b"\x1b_G") > screen.index(b"figure ")  # Under the figure's path line.
    run_id = re.findall(rb"runs/([0-9a-f-]+)\r?\n", screen)[-1].decode()
    replay = in_terminal(["runs", "show", run_id], tmp_path, TERM="xterm-256color", KITTY_WINDOW_ID="1")
    assert len(kitty_images(replay)) == 1


def test_a_terminal_that_declares_iterm2_gets_the_chart_inline(server, tmp_path):
    screen = in_terminal(ask_args(server), tmp_path, TERM="xterm-256color", TERM_PROGRAM="iTerm.app")
    found = ITERM2.findall(screen)
    assert len(found) == 1 and b"inline=1" in found[0][0], screen[-3000:]
    assert_png(base64.b64decode(found[0][1]))


def test_no_image_escape_to_a_pipe_a_plain_terminal_or_a_multiplexer(server, tmp_path):
    piped = dsstar(*ask_args(server), cwd=tmp_path, env_extra={"KITTY_WINDOW_ID": "1", "TERM": "xterm-kitty"})
    assert piped.returncode == 0, piped.stderr
    assert "dsstar: figure " in piped.stderr
    plain = in_terminal(ask_args(server), tmp_path, TERM="xterm")
    muxed = in_terminal(ask_args(server), tmp_path, TERM="xterm-kitty", TMUX="/tmp/tmux-0/default,1,0")
    for shown in ((piped.stdout + piped.stderr).encode(), plain, muxed):
        assert b"figure " in shown
        assert not [start for start in IMAGE_STARTS if start in shown], shown[-2000:]
