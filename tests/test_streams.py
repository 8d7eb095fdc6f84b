"""What goes where, as a user meets it: the history table at 80 columns and tab-separated lines in a
pipe, `runs show` on stdout, the line that closes every run on stderr, and the answer shown once
on a terminal with the run folder's path whole. A real subprocess, a real server on 127.0.0.1, and
a pseudo-terminal where the display matters."""

from __future__ import annotations

import json
import os
import pty
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import dsstar
from test_terminal import read_terminal, terminal_env

ANSWER = "Golden Gate Gaming"
LONG_QUESTION = QUESTION + " Count only card payments that were not refunded, and say which data you used."
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond) as running:
        yield running


def home(tmp_path: Path) -> dict:
    """One user whose run folders sit deep enough that their paths are longer than 80 columns."""
    deep = tmp_path / "a-user-home-with-a-long-name" / "and-another-long-folder-name"
    return {"XDG_DATA_HOME": str(deep / "xdg-data"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}


def ask(server, tmp_path: Path, *extra: str, question: str = QUESTION) -> subprocess.CompletedProcess:
    return dsstar("ask", str(SAMPLE_DATA), question, "--model", "openai/fake", "--api-base", server.base_url,
                  *extra, cwd=tmp_path, env_extra=home(tmp_path))


def in_terminal(argv: list[str], cwd: Path, env: dict, *, columns: int = 80, stdout: bool = True,
                stderr: bool = True, timeout: float = 120) -> tuple[str, str, str]:
    """Run dsstar with stdout and/or stderr on a pseudo-terminal of `columns` columns (the other one
    to a file): (what the terminal showed, without colour and cursor codes; stdout's file; stderr's file)."""
    env = terminal_env(cwd, columns, **env)
    leader, follower = pty.openpty()
    files = {name: open(cwd / f"{name}.txt", "w+") for name in ("stdout", "stderr")}
    proc = subprocess.Popen([sys.executable, "-m", "dsstar_cli", *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=follower if stdout else files["stdout"],
                            stderr=follower if stderr else files["stderr"])
    os.close(follower)
    shown = read_terminal(leader, proc, timeout)
    written = []
    for handle in files.values():
        handle.seek(0)
        written.append(handle.read())
        handle.close()
    shown = CONTROL.sub("", shown.decode("utf-8", errors="replace"))
    return shown, written[0], written[1]


def test_runs_shows_whole_ids_at_80_columns_and_tab_separated_lines_in_a_pipe(server, tmp_path):
    first = json.loads(ask(server, tmp_path, "--json").stdout)
    second = json.loads(ask(server, tmp_path, "--json", "--max-rounds", "1", question=LONG_QUESTION).stdout)
    ids = [Path(second["run_dir"]).name, Path(first["run_dir"]).name]

    piped = dsstar("runs", cwd=tmp_path, env_extra=home(tmp_path))
    assert piped.returncode == 0, piped.stderr
    header, *rows = piped.stdout.splitlines()
    assert header.split("\t") == ["id", "started", "outcome", "rounds", "calls", "cost_usd", "data_dir", "question"]
    fields = [row.split("\t") for row in rows]
    assert [f[0] for f in fields] == ids  # `dsstar runs | cut -f1` gives ids that `runs show` takes.
    assert [(f[2], f[3], f[4]) for f in fields] == [("unverified", "1", "4"), ("verified", "2", "8")]
    assert fields[0][5] == "" and fields[0][6] == str(SAMPLE_DATA.resolve()) and fields[0][7] == LONG_QUESTION

    shown, _, _ = in_terminal(["runs"], tmp_path, home(tmp_path), columns=80)
    lines = shown.splitlines()
    assert all(len(line) <= 80 for line in lines), shown
    for run_id, outcome in zip(ids, ("unverified", "verified")):
        row, = [line for line in lines if line.startswith(run_id + " ")]  # The id whole, at the start of its row.
        assert outcome in row and "unknown" in row, row
    assert any("…" in line for line in lines)  # The long question is cut, the ids are not.


def test_runs_show_writes_the_replay_to_stdout(server, tmp_path):
    run_id = Path(json.loads(ask(server, tmp_path, "--json").stdout)["run_dir"]).name
    piped = dsstar("runs", "show", run_id, cwd=tmp_path, env_extra=home(tmp_path))
    assert piped.returncode == 0 and piped.stderr == "", piped.stderr
    lines = piped.stdout.splitlines()
    for line in ("dsstar: round 2/10", "dsstar: verdict: sufficient", "dsstar: outcome verified: "):
        assert any(shown.startswith(line) for shown in lines), line

    shown, _, stderr = in_terminal(["runs", "show", run_id], tmp_path, home(tmp_path), stderr=False)
    assert stderr == "" and "╭─ Answer" in shown and "Verifier: sufficient" in shown, shown[-2000:]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_every_run_ends_with_one_line_on_stderr_saying_how_and_where(server, tmp_path):
    unreachable = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--no-progress", "--model", "openai/fake",
                         "--api-base", f"http://127.0.0.1:{free_port()}/v1", cwd=tmp_path,
                         env_extra=home(tmp_path))
    result = json.loads(unreachable.stdout)
    assert unreachable.returncode == 5 == result["exit_code"]
    assert unreachable.stderr.splitlines()[-1] == f"dsstar: {result['outcome']} (exit 5); run folder {result['run_dir']}"

    verified = ask(server, tmp_path, "--json", "--no-progress")
    run_dir = json.loads(verified.stdout)["run_dir"]
    assert verified.stderr == f"dsstar: verified (exit 0); run folder {run_dir}\n"

    plain = ask(server, tmp_path, "--max-rounds", "1", "--fresh")  # Progress lines, then the same closing line.
    assert plain.stdout == ANSWER + "\n" and plain.returncode == 3
    assert re.fullmatch(r"dsstar: unverified \(exit 3\); run folder \S+", plain.stderr.splitlines()[-1])
    assert plain.stderr.count(" run folder ") == 2  # When the run starts, and at its end: no third time.

    quiet = ask(server, tmp_path, "-q", "--max-rounds", "1", "--fresh")  # --quiet: the answer alone on stdout, and one
    assert (quiet.returncode, quiet.stdout) == (3, ANSWER + "\n")  # line on stderr: it is not verified.
    assert quiet.stderr.startswith("dsstar: the answer is not verified: unverified (exit 3)")
    assert quiet.stderr.count("\n") == 1


def test_on_a_terminal_the_answer_is_shown_once_and_the_run_folder_whole(server, tmp_path):
    argv = ["ask", str(SAMPLE_DATA), QUESTION, "--model", "openai/fake", "--api-base", server.base_url]
    shown, _, _ = in_terminal(argv, tmp_path, home(tmp_path), columns=80)
    lines = [line.strip() for line in shown.splitlines()]
    assert f"│ {ANSWER}" in shown, shown[-2000:]   # In the Answer panel...
    assert ANSWER not in lines                     # ...and not again as stdout's plain line.
    run_dir = json.loads(dsstar("runs", "--json", cwd=tmp_path, env_extra=home(tmp_path)).stdout)["runs"][0]["run_dir"]
    assert len(run_dir) > 80 and shown.count(run_dir) == 2, shown  # Whole, when the run starts and at its end.
    assert shown.rstrip().endswith(f"dsstar: verified (exit 0); run folder {run_dir}")

    # `ask ... > answer.txt` with the live view on stderr: the file still gets the answer.
    shown, stdout, _ = in_terminal(argv, tmp_path, home(tmp_path), columns=80, stdout=False)
    assert stdout == ANSWER + "\n" and f"│ {ANSWER}" in shown
