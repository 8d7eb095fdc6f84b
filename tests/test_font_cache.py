"""matplotlib's font list is built once per machine by dsstar's own process and given to each run's
work folder: a chart script no longer scans the fonts itself, and a script can never plant a list
that later runs get (sandbox/font_cache.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsstar_cli.sandbox import Executor, font_cache
from dsstar_cli.sandbox.execution import MPL_FOLDER

DRAWS = ("import matplotlib.pyplot as plt\nfrom matplotlib import font_manager\n"
         "font_manager.findfont(font_manager.FontProperties())\nimport os\n"
         "print('lists:', sorted(n for n in os.listdir('.matplotlib') if n.startswith('fontlist')))\n")
PLANTS = ("import os, glob\nfor path in glob.glob('.matplotlib/fontlist-*.json'):\n"
          "    open(path, 'w').write('{\"planted\": true}')\nopen('.matplotlib/fontlist-v0.0.json', 'w').write('{}')\n")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "dsstar" / "matplotlib"


def run(tmp_path: Path, name: str, code: str) -> tuple[Executor, object]:
    data = tmp_path / f"{name}-data"
    data.mkdir()
    (data / "a.csv").write_text("x\n1\n")
    executor = Executor(tmp_path / name / "work", data, timeout_s=120)
    try:
        return executor, executor.run(code, name)
    finally:
        executor.close()


def test_the_first_run_that_draws_builds_the_list_and_the_next_runs_start_with_it(tmp_path, cache):
    _, first = run(tmp_path, "first", DRAWS)
    assert first.ok and first.stderr == "", first.stderr
    (built,) = cache.glob("fontlist-*.json")  # Built by the time the executor closed: nothing left running.
    assert "ttflist" in json.loads(built.read_text())
    second_executor, second = run(tmp_path, "second", DRAWS)
    assert second.ok and second.stderr == "", second.stderr  # No "created a temporary cache" warning either.
    assert (second_executor.workdir / MPL_FOLDER / built.name).read_bytes() == built.read_bytes()


def test_a_run_that_never_draws_builds_nothing(tmp_path, cache):
    _, result = run(tmp_path, "plain", "print(1 + 1)\n")
    assert result.ok and not cache.exists()


def test_what_a_script_writes_never_reaches_the_machines_list(tmp_path, cache):
    run(tmp_path, "first", DRAWS)
    (built,) = cache.glob("fontlist-*.json")
    kept = built.read_bytes()
    _, planting = run(tmp_path, "planting", DRAWS + PLANTS)
    assert planting.ok, planting.stderr
    assert [p.name for p in cache.glob("fontlist-*.json")] == [built.name] and built.read_bytes() == kept


def test_a_folder_a_script_left_in_the_work_folder_is_never_written_through(tmp_path, cache):
    run(tmp_path, "first", DRAWS)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    work = tmp_path / "resumed" / "work"
    work.mkdir(parents=True)
    (work / MPL_FOLDER).symlink_to(elsewhere)  # As a resumed run's earlier script may have left it.
    assert font_cache.give(work) is False
    assert list(elsewhere.iterdir()) == []
