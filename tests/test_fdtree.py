"""Trees a script may leave where dsstar walks them: deeper than Python's recursion limit, with
paths past PATH_MAX, and folders whose permissions a script took away. The work folder's cap,
clean-up and artifacts have their attack test in security/test_trees.py; here the data folder's
integrity snapshot (a basic-tier script can write there) and the locked folders."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from pathlib import Path

from dsstar_cli.runlog import RunFolder
from dsstar_cli.sandbox import snapshot_folder
from dsstar_cli.sandbox.integrity import changed_paths
from dsstar_cli.sandbox.workfolder import inventory, remove_new, usage


@contextlib.contextmanager
def inside(folder: Path, *names: str):
    """The current folder is `folder`/names... for the block, reached one name at a time (the
    whole path may be past PATH_MAX)."""
    start = os.open(".", os.O_RDONLY)
    try:
        os.chdir(folder)
        for name in names:
            os.chdir(name)
        yield
    finally:
        os.fchdir(start)
        os.close(start)


LONG = [letter * 200 for letter in "bcdefghijklmnopqrstuvwxyz"]  # Over 5,000 characters.


def deep_and_long(folder: Path, depth: int = 1100) -> None:
    """`depth` folders named "a" with a file at the bottom, and 25 folders of 200-character names
    (past PATH_MAX) with a 1 MB file at the bottom."""
    with inside(folder):
        for _ in range(depth):
            os.mkdir("a")
            os.chdir("a")
        Path("bottom.txt").write_text("deep")
    with inside(folder):
        for name in LONG:
            os.mkdir(name)
            os.chdir(name)
        Path("blob.bin").write_bytes(os.urandom(1 << 20))


def rm(folder: Path) -> None:
    subprocess.run(["rm", "-rf", str(folder)], check=False)  # Any depth; shutil.rmtree recurses.


def test_the_data_folder_snapshot_sees_a_change_past_path_max_and_deeper_than_recursion(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    try:
        deep_and_long(data)
        before = snapshot_folder(data)
        with inside(data, *LONG):
            with open("blob.bin", "ab") as handle:
                handle.write(b"tampered")
        changed = changed_paths(before, snapshot_folder(data))
    finally:
        rm(data)
    assert len(before) == 1 + 1100 + 1 + 25 + 1
    assert [path for path in changed if path.endswith("/blob.bin")], changed


@contextlib.contextmanager
def as_an_unprivileged_user():
    """Root walks through any permission: as root, act as `nobody` for the block."""
    if os.geteuid() != 0:
        yield
        return
    os.setegid(65534)
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


def test_folders_a_script_locked_are_counted_and_removed():
    """chmod 000 on folders it made: their bytes still count against the cap, and go past it.
    (A world-reachable temp folder: as root the test acts as `nobody`, who cannot reach tmp_path.)"""
    base = Path(tempfile.mkdtemp(prefix="dsstar-locked-"))
    base.chmod(0o777)
    try:
        with as_an_unprivileged_user():
            work = base / "work"
            work.mkdir()
            (work / "kept.csv").write_text("an earlier step's artifact\n")
            before = inventory(work)
            (work / "locked" / "inner").mkdir(parents=True)
            (work / "locked" / "inner" / "blob.bin").write_bytes(os.urandom(3 << 20))
            (work / "locked" / "inner").chmod(0)
            (work / "locked").chmod(0)
            counted = usage(work)
            remove_new(work, before)
            left = sorted(os.listdir(work))
    finally:
        rm(base)
    assert counted >= 3 << 20
    assert left == ["kept.csv"]


def test_a_run_folder_with_a_tree_deeper_than_recursion_is_listed_and_discarded(tmp_path):
    run = RunFolder(tmp_path / "run")
    try:
        deep_and_long(run.work)
        artifacts = run.artifacts()
        run.discard()
        gone = not (tmp_path / "run").exists()
    finally:
        rm(tmp_path / "run")
    assert [name for name in artifacts if name.endswith("/bottom.txt")]
    assert not [name for name in artifacts if name.endswith("blob.bin")]  # Past PATH_MAX: nothing could open it.
    assert gone
