from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SAMPLE_DATA = ROOT / "sample_data"
sys.path.insert(0, str(TESTS))  # fake_openai, sample_agent, sample_answers


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own description cache and user data dir (where run folders go when
    run_dir cannot take them): none reads or fills the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))


def tree_bytes(folder: Path) -> dict[str, bytes]:
    """Every file's bytes: what 'untouched' means for a data folder."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    """A private copy of sample_data/ that a test may point runs at."""
    target = tmp_path / "data"
    shutil.copytree(SAMPLE_DATA, target)
    return target


@pytest.fixture
def config(tmp_path: Path):
    """The packaged defaults with the run folder inside the test's tmp dir."""
    from dsstar_cli.config import load_config

    return load_config(overrides={"run_dir": str(tmp_path / "runs")}, env={}, cwd=tmp_path)
