"""Two outputs made for people: `-q` says on stderr when its answer is not verified (stdout still
the answer alone), and `dsstar describe`'s text shows control sequences from file names and values
as visible escapes wherever it goes (only --json keeps exact bytes). The CLI in a subprocess."""

from __future__ import annotations

import json

from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import dsstar

ANSWER = "Golden Gate Gaming"
TITLE = "\x1b]0;pwned\x07"  # OSC 0: sets the terminal window's title
CLEAR = "\x1b[2J"           # CSI 2J: clears the screen


def never_satisfied(role: str, messages: list[dict]) -> str:
    """The sample agent, but the verifier never agrees: the round cap ends the run, unverified."""
    return "No: not yet." if role == "verifier" else respond(role, messages)


def test_quiet_says_on_stderr_that_its_answer_is_not_verified(tmp_path):
    with FakeOpenAIServer(never_satisfied) as server:
        proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "-q", "--max-rounds", "1", "--model", "openai/fake",
                      "--api-base", server.base_url, cwd=tmp_path)
    assert proc.returncode == 3
    assert proc.stdout == ANSWER + "\n"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dsstar: the answer is not verified: unverified (exit 3)"), lines


def test_quiet_with_a_verified_answer_prints_nothing_on_stderr(tmp_path):
    with FakeOpenAIServer(respond) as server:
        proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "-q", "--model", "openai/fake", "--api-base",
                      server.base_url, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, ANSWER + "\n", "")


def test_describe_into_a_pipe_shows_control_sequences_as_escapes(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / f"notes{TITLE}.csv").write_text(f"a,b\n1,x{CLEAR}y\n")
    proc = dsstar("describe", str(data), cwd=tmp_path)  # stdout is a pipe
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "notes\\x1b]0;pwned\\x07.csv" in proc.stdout and "x\\x1b[2Jy" in proc.stdout
    exact = json.loads(dsstar("describe", str(data), "--json", cwd=tmp_path).stdout)
    assert exact["files"][0]["path"] == f"notes{TITLE}.csv"  # --json: the exact name
