"""`make install` says what it did and nothing else: setuptools' note about editable installs
("Please be careful with folders in your working directory...") is not shown, a real build error
still is (issue 23: every `make install` printed the note)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


def install_commands(project, venv) -> list[str]:
    """The commands `make install` runs (make -n), for a venv of the test's own."""
    shown = subprocess.run(["make", "-n", "-C", str(project), "install", f"VENV={venv}", f"PYTHON={sys.executable}"],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    return [line for line in shown.stdout.splitlines() if " -m venv " in line or " install " in line]


def run(command: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_install_shows_no_editable_install_note_but_shows_errors(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    for name in ("Makefile", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    shutil.copytree(ROOT / "dsstar_cli", project / "dsstar_cli", ignore=shutil.ignore_patterns("__pycache__"))
    make_venv, upgrade_pip, install = install_commands(project, tmp_path / "venv")
    for command in (make_venv, upgrade_pip):
        done = run(command, project)
        if done.returncode != 0:
            pytest.skip(f"no package index to install from: {done.stderr[-300:]}")
    installed = run(install + " --no-deps", project)  # The project's own build: where the note came from.
    assert installed.returncode == 0, installed.stderr
    assert "Editable installation" not in installed.stdout + installed.stderr
    assert "Please be careful" not in installed.stdout + installed.stderr
    (project / "pyproject.toml").write_text((project / "pyproject.toml").read_text()
                                           .replace('name = "dsstar"', 'name = ["not", "a", "name"]'))
    broken = run(install + " --no-deps", project)
    assert broken.returncode != 0 and "error" in broken.stderr.lower() and "project.name" in broken.stderr
