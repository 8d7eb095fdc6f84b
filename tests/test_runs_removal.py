"""`dsstar runs rm` and `dsstar runs prune`: runs go, a running one stays, nothing outside the runs
folder is ever removed (issue 23: there was no way to remove a run but by hand)."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import cli_env, dsstar as run_dsstar

DAY = 86400


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """The folder of a real run (the fake model answers at once), copied by `runs_in`."""
    home = tmp_path_factory.mktemp("one-run")
    with FakeOpenAIServer(respond) as server:
        proc = run_dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--model", "openai/fake", "--api-base",
                      server.base_url, cwd=home)
    assert proc.returncode == 0, proc.stderr
    return Path(json.loads(proc.stdout)["run_dir"])


def runs_in(home: Path, finished_run: Path, count: int) -> list[Path]:
    """`count` finished runs of the user whose home is `home`: copies of a real one under ids of their
    own (a real run takes seconds)."""
    root = runs_root(home)
    root.mkdir(parents=True, exist_ok=True)
    folders = [root / f"{finished_run.name[:-6]}{n * 0x111111:06x}" for n in range(1, count + 1)]
    for folder in folders:
        shutil.copytree(finished_run, folder, symlinks=True)
    return folders


def dsstar(*args: str, cwd: Path):
    """dsstar as the user whose home is `cwd`, with a temp folder of its own: the fallback run root
    in it (<tmp>/dsstar-<uid>/runs) is listed too, and a prune must not reach other tests' runs."""
    (cwd / "tmp").mkdir(exist_ok=True)
    return run_dsstar(*args, cwd=cwd, env_extra={"TMPDIR": str(cwd / "tmp")})


def age(folder: Path, days: float) -> None:
    """Make a run look last written `days` ago (its journal's time is what prune reads)."""
    then = time.time() - days * DAY
    os.utime(folder / "events.jsonl", (then, then))


def runs_root(home: Path) -> Path:
    return home / "xdg-data" / "dsstar" / "runs"


def test_rm_removes_the_runs_named_as_runs_show_names_them(finished_run, tmp_path):
    first, second, third = runs_in(tmp_path, finished_run, 3)
    piped = dsstar("runs", "rm", first.name, cwd=tmp_path)  # No terminal, no --yes: refused, nothing gone.
    assert piped.returncode == 2 and "--yes" in piped.stderr and first.is_dir()
    dry = dsstar("runs", "rm", first.name, "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0 and dry.stdout.startswith(first.name + "\t") and first.is_dir()
    # By id, by a unique prefix of it, and by its folder's path: as `runs show` takes them.
    gone = dsstar("runs", "rm", first.name, second.name[:-1], str(third.relative_to(tmp_path)), "--yes", cwd=tmp_path)
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.split() == [first.name, second.name, third.name]
    assert not first.exists() and not second.exists() and not third.exists()
    assert json.loads(dsstar("runs", "--json", cwd=tmp_path).stdout) == {"runs": []}
    unknown = dsstar("runs", "rm", "20990101-000000-abcdef", "--yes", cwd=tmp_path)
    assert unknown.returncode == 2 and "not a run folder, nor the id of a run" in unknown.stderr


def test_prune_removes_runs_older_than_the_duration(finished_run, tmp_path):
    old, recent = runs_in(tmp_path, finished_run, 2)
    age(old, 40)
    age(recent, 2)
    dry = dsstar("runs", "prune", "--older-than", "30d", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0 and dry.stdout.split("\t")[:3] == [old.name, "40d ago", "verified"]
    assert "would remove 1 run " in dry.stderr and old.is_dir()
    pruned = dsstar("runs", "prune", "--older-than", "30d", "--yes", cwd=tmp_path)
    assert (pruned.returncode, pruned.stdout) == (0, old.name + "\n") and not old.exists() and recent.is_dir()
    assert dsstar("runs", "prune", "--older-than", "1d12h", "--yes", cwd=tmp_path).stdout == recent.name + "\n"
    none = dsstar("runs", "prune", "--older-than", "1d", "--yes", cwd=tmp_path)
    assert none.returncode == 0 and "nothing to remove" in none.stderr
    bad = dsstar("runs", "prune", "--older-than", "30 days", "--yes", cwd=tmp_path)
    assert bad.returncode == 2 and "30d, 12h" in bad.stderr


def test_nothing_outside_the_runs_folder_is_removed(finished_run, tmp_path):
    """A folder that looks like a run (its name an id, a journal inside) but is not in the runs
    folder is refused by path, and a link planted in the runs folder goes without what it leads to."""
    [run] = runs_in(tmp_path, finished_run, 1)
    mine = tmp_path / "my-files" / run.name
    mine.mkdir(parents=True)
    (mine / "events.jsonl").write_text((run / "events.jsonl").read_text())
    (mine / "thesis.txt").write_text("years of work")
    refused = dsstar("runs", "rm", str(mine), "--yes", cwd=tmp_path)
    assert refused.returncode == 2 and "not in the runs folder" in refused.stderr
    (runs_root(tmp_path) / "20200101-000000-0a0b0c").symlink_to(mine.parent)
    (mine.parent / "events.jsonl").write_text("{}\n")
    age(mine.parent, 400)
    assert dsstar("runs", "rm", "20200101", "--yes", cwd=tmp_path).returncode == 0
    pruned = dsstar("runs", "prune", "--older-than", "1w", "--yes", cwd=tmp_path)
    assert pruned.returncode == 0 and not (runs_root(tmp_path) / "20200101-000000-0a0b0c").exists()
    assert (mine / "thesis.txt").read_text() == "years of work" and (mine.parent / "events.jsonl").exists()
    assert run.is_dir()  # Not old: pruning a week leaves it.


def test_a_running_run_is_left_alone(tmp_path):
    """A run whose model call is still out: `rm` says it is in use (exit 1), `prune` passes it by;
    once it ends it can go."""
    called, release = threading.Event(), threading.Event()

    def hold_the_first_call(role: str, messages: list) -> str:
        called.set()
        release.wait(60)
        return respond(role, messages)

    (tmp_path / "tmp").mkdir()
    with FakeOpenAIServer(hold_the_first_call) as held:
        running = subprocess.Popen(
            [sys.executable, "-m", "dsstar_cli", "ask", str(SAMPLE_DATA), QUESTION, "--json", "--model",
             "openai/fake", "--api-base", held.base_url], cwd=tmp_path, env=cli_env(tmp_path, TMPDIR=str(tmp_path / "tmp")),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        try:
            assert called.wait(60), "the run never called the model"
            [folder] = list(runs_root(tmp_path).iterdir())
            age(folder, 10)
            refused = dsstar("runs", "rm", folder.name, "--yes", cwd=tmp_path)
            assert refused.returncode == 1 and "in use by a running dsstar" in refused.stderr and folder.is_dir()
            passed = dsstar("runs", "prune", "--older-than", "1d", "--yes", cwd=tmp_path)
            assert passed.returncode == 1 and "in use" in passed.stderr and folder.is_dir()
        finally:
            release.set()
            out, err = running.communicate(timeout=120)
        assert running.returncode == 0, err
    assert dsstar("runs", "rm", folder.name, "--yes", cwd=tmp_path).stdout == folder.name + "\n"
    assert not folder.exists()


def answer_prompt(argv: list[str], cwd: Path, reply: str) -> tuple[int, str, str]:
    """Run `argv` with stdin and stderr on a pseudo-terminal, answer its question with `reply`:
    (exit code, what the terminal showed, stdout)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, cwd=cwd, env=cli_env(cwd, TMPDIR=str(cwd / "tmp")), stdin=follower,
                            stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    shown, deadline = b"", time.monotonic() + 60
    while b"[y/N]" not in shown and time.monotonic() < deadline and proc.poll() is None:
        if select.select([leader], [], [], 0.5)[0]:
            shown += os.read(leader, 65536)
    os.write(leader, reply.encode() + b"\n")
    out, _ = proc.communicate(timeout=60)
    while select.select([leader], [], [], 0.2)[0]:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return proc.returncode, shown.decode(errors="replace"), out.decode()


def test_on_a_terminal_rm_lists_the_runs_and_asks_first(finished_run, tmp_path):
    [run] = runs_in(tmp_path, finished_run, 1)
    argv = [sys.executable, "-m", "dsstar_cli", "runs", "rm", run.name]
    code, shown, out = answer_prompt(argv, tmp_path, "n")
    assert (code, out) == (0, "") and run.name in shown and "Remove 1 run? [y/N]" in shown
    assert "nothing removed" in shown and run.is_dir()
    code, shown, out = answer_prompt(argv, tmp_path, "y")
    assert (code, out) == (0, run.name + "\n") and not run.exists()
