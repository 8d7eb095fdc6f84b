"""The run folder: never inside the data folder, and dsstar's own writes never follow a link a
script planted in it."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from dsstar_cli.config import load_config
from dsstar_cli.runlog import RunFolder, RunFolderError, choose_run_root, run_root_candidates
from dsstar_cli.runner import description_cache, open_run_folder
from test_cli import dsstar


def tree(folder: Path) -> set[str]:
    """Every path below `folder`, folders included: what 'nothing was created' means."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A home folder holding data, used as the data folder, with the current directory inside it;
    the system temp dir is elsewhere."""
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    (home / "sales.csv").write_text("a,b\n1,2\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.chdir(home / "project")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "systemtmp"))
    (tmp_path / "systemtmp").mkdir()
    return home


def test_home_as_data_folder_puts_the_run_folder_in_the_private_temp_dir(home, tmp_path):
    config = load_config(env={}, cwd=home / "project")  # run_dir: .dsstar/runs, inside the home.
    before = tree(home)
    run = open_run_folder(config, home)
    run.close()
    private = (tmp_path / "systemtmp" / f"dsstar-{os.getuid()}").resolve()
    assert run.path.parent == private / "runs" and not run.path.is_relative_to(home.resolve())
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert tree(home) == before  # Not even an empty .dsstar/ or .local/ appeared.


def test_the_user_data_dir_comes_before_the_temp_dir(home, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    root = choose_run_root(home, run_root_candidates(Path(".dsstar/runs")))
    assert root == (tmp_path / "xdg-data" / "dsstar" / "runs").resolve()


def test_a_writable_run_dir_outside_the_data_folder_is_used(home, tmp_path):
    assert choose_run_root(home, run_root_candidates(tmp_path / "mine")) == (tmp_path / "mine").resolve()


def test_an_unwritable_run_dir_falls_back(home, tmp_path, monkeypatch):
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    root = choose_run_root(home, run_root_candidates(tmp_path / "afile" / "runs"))  # Under a file.
    assert root == (tmp_path / "xdg-data" / "dsstar" / "runs").resolve()


def test_no_place_outside_the_data_folder_is_one_clear_error(home, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(home / "tmp"))
    (home / "tmp").mkdir()
    before = tree(home)
    with pytest.raises(RunFolderError) as caught:
        choose_run_root(home, run_root_candidates(Path(".dsstar/runs")))
    message = str(caught.value)
    assert "no place for run folders outside the data folder" in message and "\n" not in message
    assert message.count("inside the data folder") == 3 and caught.value.exit_code == 4
    assert tree(home) == before


def test_a_planted_link_or_foreign_folder_in_the_temp_dir_is_refused(home, tmp_path):
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir()
    (tmp_path / "systemtmp" / f"dsstar-{os.getuid()}").symlink_to(elsewhere)
    with pytest.raises(RunFolderError, match="is a link, not a folder, or not ours"):
        choose_run_root(home, run_root_candidates(Path(".dsstar/runs")))
    assert list(elsewhere.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make a folder someone else's")
def test_a_temp_folder_owned_by_someone_else_is_refused(home, tmp_path):
    foreign = tmp_path / "systemtmp" / f"dsstar-{os.getuid()}"
    foreign.mkdir(mode=0o777)
    os.chown(foreign, 65534, 65534)
    with pytest.raises(RunFolderError, match="not ours"):
        choose_run_root(home, run_root_candidates(Path(".dsstar/runs")))


def test_cli_stops_before_any_work_when_no_place_is_outside_the_data_folder(tmp_path):
    (tmp_path / "sales.csv").write_text("a,b\n1,2\n")
    (tmp_path / "tmp").mkdir()
    before = tree(tmp_path)
    inside = {"XDG_DATA_HOME": str(tmp_path / "share"), "TMPDIR": str(tmp_path / "tmp")}
    proc = dsstar("ask", str(tmp_path), "q?", "--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1",
                  cwd=tmp_path, env_extra=inside)
    assert proc.returncode == 4, proc.stderr
    # The question (shown as soon as the command line is read), then one line: the error.
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == "dsstar: question: q?" and len(lines) == 2 and "no place for run folders" in lines[1]
    assert tree(tmp_path) == before


def test_no_description_cache_inside_the_data_folder(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    inside = load_config(overrides={"analyzer.cache_dir": str(data / "cache")}, env={}, cwd=tmp_path)
    assert description_cache(inside, data) is None
    monkeypatch.setenv("XDG_CACHE_HOME", str(data / ".cache"))  # The default cache dir, inside the data.
    assert description_cache(load_config(env={}, cwd=tmp_path), data) is None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    outside = description_cache(load_config(env={}, cwd=tmp_path), data)
    assert outside.folder == tmp_path / "cache" / "dsstar" / "descriptions"


@pytest.fixture
def run(tmp_path):
    folder = RunFolder(tmp_path / "run")
    yield folder
    folder.close()


@pytest.fixture
def victim(tmp_path) -> Path:
    """A file of the user's that a script would like dsstar to overwrite."""
    path = tmp_path / "victim.csv"
    path.write_text("precious\n")
    return path


def test_layout_has_scripts_beside_work(run):
    assert run.scripts == run.path / "scripts" and run.scripts.is_dir() and run.work.is_dir()


def test_a_link_planted_at_the_target_name_is_replaced_not_written_through(run, victim):
    (run.scripts / "001-round01-code.stdout.txt").symlink_to(victim)
    written = run.write("scripts/001-round01-code.stdout.txt", "output")
    assert victim.read_text() == "precious\n"
    assert not written.is_symlink() and written.read_text() == "output"


def test_a_link_planted_at_the_old_temporary_name_is_not_used(run, victim):
    (run.scripts / "001-round01-code.stdout.txt.tmp").symlink_to(victim)
    run.write("scripts/001-round01-code.stdout.txt", "output")
    assert victim.read_text() == "precious\n"
    assert (run.scripts / "001-round01-code.stdout.txt").read_text() == "output"
    leftovers = [p.name for p in run.scripts.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == ["001-round01-code.stdout.txt.tmp"]  # Only the planted link: ours was renamed.


def test_a_folder_replaced_by_a_link_is_refused(run, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run.work / "plots").symlink_to(elsewhere)
    with pytest.raises(RunFolderError, match="a folder on the way is a link"):
        run.write("work/plots/summary.txt", "x")
    assert list(elsewhere.iterdir()) == []


def test_write_creates_missing_folders_and_keeps_no_temporary_file(run):
    run.write("calls/0001-planner.json", "{}")
    run.write("result.json", "{}")
    assert sorted(p.name for p in run.path.rglob("*") if p.is_file()) == ["0001-planner.json", "events.jsonl",
                                                                          "result.json"]


def test_artifacts_are_regular_files_in_work_never_links(run, tmp_path):
    outside_dir = tmp_path / "outside"
    outside_dir.mkdir()
    (outside_dir / "secret.txt").write_text("secret")
    (run.work / "plot.png").write_bytes(b"png")
    (run.work / "report.py").write_text("print(1)")  # A script may write a .py file: it is an artifact.
    (run.work / "sub").mkdir()
    (run.work / "sub" / "table.csv").write_text("a\n")
    (run.work / "secret.txt").symlink_to(outside_dir / "secret.txt")
    (run.work / "linked").symlink_to(outside_dir)
    os.mkfifo(run.work / "pipe")
    (run.work / "001-round01-code.py").write_text("x")  # Our own script, in an old run's layout.
    (run.scripts / "002-round01-code.stdout.txt").write_text("out")
    assert run.artifacts() == ["work/plot.png", "work/report.py", "work/sub/table.csv"]


def test_resume_accepts_an_old_run_without_scripts(tmp_path):
    RunFolder(tmp_path / "run").close()
    (tmp_path / "run" / "scripts").rmdir()
    resumed = RunFolder(tmp_path / "run", resume=True)
    resumed.close()
    assert resumed.scripts.is_dir()


def test_the_journal_is_not_opened_through_a_link(tmp_path, victim):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "events.jsonl").symlink_to(victim)
    with pytest.raises(RunFolderError):
        RunFolder(tmp_path / "run", resume=True)
    assert victim.read_text() == "precious\n"
