"""Run history as a user meets it: every run in one place per user, `dsstar runs`, `runs show`, and
`resume` by id or by a relative path, through a real subprocess and a real server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import dsstar


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond) as running:
        yield running


def ask(server, cwd: Path, *extra: str):
    cwd.mkdir(exist_ok=True)
    return dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--model", "openai/fake", "--api-base",
                  server.base_url, *extra, cwd=cwd, env_extra=shared_home(cwd))


def shared_home(cwd: Path) -> dict:
    """One user: the same data and config dirs whatever the current directory."""
    home = cwd.parent
    return {"XDG_DATA_HOME": str(home / "xdg-data"), "XDG_CONFIG_HOME": str(home / "xdg"),
            "XDG_CACHE_HOME": str(home / "xdg-cache")}


def test_runs_from_anywhere_are_listed_in_one_place_and_replayed(server, tmp_path):
    first = json.loads(ask(server, tmp_path / "project-a").stdout)
    second = json.loads(ask(server, tmp_path / "project-b", "--max-rounds", "1", "--fresh").stdout)  # Not from memory.
    for result in (first, second):  # Not in ./.dsstar of whichever directory was current.
        assert Path(result["run_dir"]).parent == tmp_path / "xdg-data" / "dsstar" / "runs"
    assert not (tmp_path / "project-a" / ".dsstar").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    listed = json.loads(dsstar("runs", "--json", cwd=elsewhere, env_extra=shared_home(elsewhere)).stdout)["runs"]
    assert [run["run_dir"] for run in listed] == [second["run_dir"], first["run_dir"]]  # Newest first.
    assert (listed[0]["outcome"], listed[0]["rounds"], listed[1]["outcome"], listed[1]["rounds"]) == (
        "unverified", 1, "verified", 2)
    assert listed[1]["question"] == QUESTION and listed[1]["data_dir"] == str(SAMPLE_DATA.resolve())
    assert listed[1]["cost_usd"] is None and listed[1]["calls"] == 8 and listed[1]["started"]
    table = dsstar("runs", cwd=elsewhere, env_extra=shared_home(elsewhere)).stdout  # Piped: tab-separated.
    assert f"{Path(first['run_dir']).name}\t" in table and "\tverified\t2\t8\t\t" in table

    run_id = Path(first["run_dir"]).name
    shown = dsstar("runs", "show", run_id[:-2], cwd=elsewhere, env_extra=shared_home(elsewhere))
    assert shown.returncode == 0, shown.stderr
    for line in ("dsstar: round 2/10", "dsstar: verdict: sufficient", "dsstar: outcome verified"):
        assert line in shown.stdout, line
    data = json.loads(dsstar("runs", "show", run_id, "--json", cwd=elsewhere, env_extra=shared_home(elsewhere)).stdout)
    assert data["result"]["answer"] == "Golden Gate Gaming" and data["run"]["id"] == run_id
    assert data["events"][0]["event"] == "run_started" and data["events"][-1]["event"] == "answer"
    missing = dsstar("runs", "show", "19990101", cwd=elsewhere, env_extra=shared_home(elsewhere))
    assert missing.returncode == 2 and "19990101 is not a run folder, nor the id of a run" in missing.stderr


def test_resume_by_relative_path_or_id_on_a_moved_server_names_scripts_by_their_round(tmp_path):
    """A run killed after round 1 (no result.json) resumes from `ls`'s relative path, against a server
    that moved (--api-base), and its final script belongs to round 1, not round 0."""
    cwd = tmp_path / "work"
    with FakeOpenAIServer(respond) as old:
        result = json.loads(ask(old, cwd, "--max-rounds", "1").stdout)
    run_dir = Path(result["run_dir"])
    (run_dir / "result.json").unlink()  # As after kill -9 just before the result was written.
    relative = Path("..", "xdg-data", "dsstar", "runs", run_dir.name)
    with FakeOpenAIServer(respond) as moved:
        resumed = dsstar("resume", str(relative), "--json", "--api-base", moved.base_url, cwd=cwd,
                         env_extra=shared_home(cwd))
        assert resumed.returncode == 3, resumed.stderr
        assert json.loads(resumed.stdout)["answer"] == "Golden Gate Gaming" and moved.requests
        finals = sorted(p.name for p in (run_dir / "scripts").glob("*-final.py"))
        assert finals == ["002-round01-final.py", "003-round01-final.py"]
        (run_dir / "result.json").unlink()
        by_id = dsstar("resume", run_dir.name, "--json", "--api-base", moved.base_url, cwd=tmp_path,
                       env_extra=shared_home(cwd))
        assert by_id.returncode == 3, by_id.stderr


def test_resume_of_a_folder_that_is_no_run_says_so(tmp_path):
    (tmp_path / "photos").mkdir()
    proc = dsstar("resume", "photos", cwd=tmp_path)
    assert proc.returncode == 2 and "photos is not a run folder" in proc.stderr
    assert "stopped before its first round" not in proc.stderr
