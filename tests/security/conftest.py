"""Fixtures of the security suite: every test runs in each sandbox tier this machine has, on both
execution paths (warm worker, cold worker), with canaries all around the run.

What a tier promises is checked by what happens, never by what the executor says about itself:

- `tier_and_path`  strong (dsstar's own namespaces), strong-bwrap (bubblewrap), medium, basic; each
                   warm and cold. Skips a tier the machine lacks, or one a test's
                   `@pytest.mark.tiers(...)` leaves out (strong-bwrap counts as strong);
- `outside`        canaries outside the data and run folders: a fake home (HOME, with an `.env`
                   holding the key), the cwd, the cache and config dirs (XDG_*), a file a data link
                   leads to, and a name in the host /tmp; none may change, none may gain a file;
- `box`            an Executor over a small data folder in a RunFolder, the key in the environment;
                   `box.run(code)` runs a hostile script and checks the data folder after it: in
                   strong and medium unchanged, in basic unchanged or the change reported. At the
                   end: no process of the run left, no key in the run folder.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dsstar_cli.runlog import RunFolder
from dsstar_cli.sandbox import Execution, Executor
from dsstar_cli.sandbox import tiers
from dsstar_cli.sandbox.tiers import probe
from security.support import (SECRET, describe, differences, escape_attempts, kill_all, processes_in, snapshot,
                     wait_for)

TIERS = ["strong", "strong-bwrap", "medium", "basic"]
CONFINED = ("strong", "medium")  # The tiers that confine files, network and signals.
EXECUTOR_DEFAULTS = {"timeout_s": 5, "memory_mb": 1024, "max_output_bytes": 100_000, "max_workdir_mb": 64}


def pytest_configure(config):
    config.addinivalue_line("markers", "tiers(*tiers, reason): run only in these tiers (the others promise less)")
    config.addinivalue_line("markers", "executor(**options): Executor options for this test")


@dataclass(frozen=True)
class Tier:
    kind: str           # "strong", "medium" or "basic": what the tier promises
    warm: bool          # the warm worker, or a cold one per script
    options: dict       # further Executor options (the strong tier's backend)


@pytest.fixture(params=[(tier, path) for tier in TIERS for path in ("warm", "cold")],
                ids=lambda param: "-".join(param))
def tier_and_path(request) -> Tier:
    tier, path = request.param
    kind = tier.split("-")[0]
    if not probe().available.get(kind):
        pytest.skip(f"no {kind} tier on this machine: {probe().details.get(kind)}")
    options = {}
    if tier == "strong-bwrap":  # The same promises, kept by bubblewrap instead of dsstar's own namespaces.
        works, why = tiers.bubblewrap_works()
        if not works:
            pytest.skip(f"bubblewrap does not work here: {why}")
        options = {"strong_backend": "bubblewrap"}
    wanted = request.node.get_closest_marker("tiers")
    if wanted and kind not in wanted.args:
        pytest.skip(f"the {kind} tier does not promise this: {wanted.kwargs['reason']}")
    return Tier(kind, path == "warm", options)


# -- canaries outside the run ---------------------------------------------------------------------

@dataclass
class Outside:
    base: Path
    home: Path          # HOME; .env holds the key
    cwd: Path           # the process's cwd; a dsstar.yaml must never appear here
    cache: Path         # XDG_CACHE_HOME; dsstar/canary.json stands for the description cache
    config: Path        # XDG_CONFIG_HOME
    linked: Path        # the folder a link in the data folder leads to
    tmp_canary: Path    # a name in the host /tmp that must never appear

    @property
    def folders(self) -> list[Path]:
        return [self.home, self.cwd, self.cache, self.config, self.linked]

    @property
    def files(self) -> list[Path]:
        return [path for folder in self.folders for path in folder.rglob("*") if path.is_file()]

    @property
    def env_file(self) -> Path:
        return self.home / ".env"

    @property
    def cache_canary(self) -> Path:
        return self.cache / "dsstar" / "canary.json"

    @property
    def linked_file(self) -> Path:
        return self.linked / "users-secret.csv"

    def snapshot(self) -> dict:
        return {str(folder): snapshot(folder) for folder in self.folders}


@pytest.fixture
def outside(tmp_path, monkeypatch) -> Outside:
    token = tmp_path.name + "-" + os.urandom(4).hex()
    found = Outside(tmp_path, tmp_path / "home", tmp_path / "cwd", tmp_path / "cache", tmp_path / "config",
                    tmp_path / "outside", Path(f"/tmp/dsstar-canary-{token}"))
    for folder, name, text in ((found.home, ".env", f"OPENAI_API_KEY={SECRET}\n"),
                               (found.cwd, "notes.txt", "the user's own notes\n"),
                               (found.cache, "dsstar/canary.json", '{"description": "trusted"}\n'),
                               (found.config, "dsstar/config.yaml", "model: trusted\n"),
                               (found.linked, "users-secret.csv", f"user,password\nroot,TOP-SECRET-{token}\n")):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
        (folder / name).chmod(0o600)
    monkeypatch.setenv("HOME", str(found.home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(found.cache))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(found.config))
    monkeypatch.chdir(found.cwd)
    before = found.snapshot()
    yield found
    planted = found.tmp_canary.exists()
    if planted:
        found.tmp_canary.unlink()
    assert not planted, f"a script created {found.tmp_canary} in the host /tmp"
    after = found.snapshot()
    changed = {folder: differences(before[folder], after[folder]) for folder in before}
    assert before == after, f"canaries outside the run changed: {changed}"


# -- the sandbox under attack ---------------------------------------------------------------------

def make_data(folder: Path, link_target: Path) -> None:
    """A small data folder, with one link leading out of it (users.csv)."""
    (folder / "sub").mkdir(parents=True, exist_ok=True)
    (folder / "sales.csv").write_text("region,units\nnorth,10\nsouth,20\n")
    (folder / "sub" / "notes.md").write_text("# Notes\n")
    if not os.path.lexists(folder / "users.csv"):
        (folder / "users.csv").symlink_to(link_target)
    for path, mode in ((folder, 0o755), (folder / "sub", 0o755), (folder / "sales.csv", 0o644),
                       (folder / "sub" / "notes.md", 0o644)):
        path.chmod(mode)
        os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))


def restore_data(folder: Path, link_target: Path) -> None:
    """Put the data folder back as make_data left it (in place: a sandbox may hold it open)."""
    if os.path.lexists(folder) and not folder.is_dir():
        folder.unlink()
    folder.mkdir(exist_ok=True)
    for entry in folder.iterdir():
        shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    make_data(folder, link_target)


@dataclass
class Box:
    tier: str                 # "strong", "medium" or "basic"
    warm: bool                # the warm worker, or a cold one per script
    executor: Executor
    run_folder: RunFolder
    data: Path
    outside: Outside
    data_before: dict = field(default_factory=dict)

    @property
    def confined(self) -> bool:
        return self.tier in CONFINED

    @property
    def work(self) -> Path:
        return self.run_folder.work

    def run(self, code: str, name: str = "hostile", timeout_s: float | None = None) -> Execution:
        """Run `code` as a script; in a confined tier it first tries to reach every canary. Then: no
        key in its output, and the data folder unchanged (basic: or the change reported)."""
        if self.confined:
            code = escape_attempts(self.outside.files, self.outside.folders, self.outside.tmp_canary) + code
        result = self.executor.run(code, name, timeout_s=timeout_s)
        assert SECRET not in result.stdout + result.stderr
        after = snapshot(self.data)
        if after != self.data_before:
            changed = differences(self.data_before, after)
            restore_data(self.data, self.outside.linked_file)  # Each attack meets the same data.
            self.data_before = snapshot(self.data)
            assert not self.confined, f"{self.tier}: the script changed the data folder: {changed}"
            assert not result.ok and set(result.data_changed) & set(changed), \
                f"basic: the change to {changed} went unreported (data_changed: {result.data_changed})"
        return result


@pytest.fixture
def box(tier_and_path, outside, request, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # Before the executor and the run folder start.
    data = outside.base / "data"
    make_data(data, outside.linked_file)
    run_folder = RunFolder(outside.base / "run")
    wanted = request.node.get_closest_marker("executor")
    options = {**EXECUTOR_DEFAULTS, **tier_and_path.options, **(wanted.kwargs if wanted else {})}
    executor = Executor(run_folder.work, data, tier=tier_and_path.kind, warm=tier_and_path.warm, **options)
    found = Box(tier_and_path.kind, tier_and_path.warm, executor, run_folder, data, outside, snapshot(data))
    try:
        yield found
    finally:
        executor.close()
        run_folder.close()
    left = wait_for(lambda: processes_in(run_folder.work), 3)
    details = describe(left)
    kill_all(left)
    assert not left, f"processes of the run outlived it: {details}"
    keyed = [str(path) for path in run_folder.path.rglob("*")
             if path.is_file() and not path.is_symlink() and SECRET.encode() in path.read_bytes()]
    assert not keyed, f"the key is in the run folder: {keyed}"
    assert snapshot(data) == found.data_before, "the data folder changed"


# -- a process of the host's, not the run's --------------------------------------------------------

@dataclass
class Sleeper:
    proc: subprocess.Popen
    marker: str       # in its command line


@pytest.fixture
def sleeper():
    """A neighbour process of the same user, the key in its environment (as `make`, `uv run`, CI
    runners hold it): no script may read, signal or see it."""
    marker = "dsstar-neighbour-" + secrets.token_hex(6)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", marker],
                            env={"PATH": os.environ.get("PATH", ""), "OPENAI_API_KEY": SECRET})
    yield Sleeper(proc, marker)
    proc.kill()
    proc.wait()
