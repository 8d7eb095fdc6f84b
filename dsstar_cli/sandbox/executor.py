"""Run one generated script in the sandbox: its tier, limits, deadline, capped output, and the checks after."""

from __future__ import annotations

import os
import socket
import stat
import sys
import threading
from pathlib import Path

from dsstar_cli import fdtree
from dsstar_cli.sandbox import duckdb_setup, font_cache, memory_bound, tiers, workfolder
from dsstar_cli.sandbox.execution import Execution
from dsstar_cli.sandbox.integrity import changed_paths, snapshot_folder
from dsstar_cli.sandbox.query_server import QueryEngine, QueryServer
from dsstar_cli.sandbox.worker_client import NOBODY, WarmWorker
from dsstar_cli.safewrite import replace_file
from dsstar_cli.secrets import redact, secret_values


def _pandas_path() -> str | None:
    """pandas' __init__.py (so, site-packages), found without importing pandas."""
    import importlib.util

    spec = importlib.util.find_spec("pandas")
    return spec.origin if spec and spec.origin else None


def _others_can_reach(path: Path) -> bool:
    """Every folder above `path` lets other users through (o+x)."""
    return all(os.stat(folder).st_mode & 0o001 for folder in path.parents)


def _others_can_read(root: Path) -> bool:
    """Every folder below `root` is o+rx and every file o+r, and `root` itself can be reached."""
    if os.stat(root).st_mode & 0o005 != 0o005:
        return False
    for entry in fdtree.entries(root):
        mode = entry.stat.st_mode
        if stat.S_ISLNK(mode):  # A link to a file counts as that file.
            try:
                mode = os.stat(entry.name, dir_fd=entry.folder).st_mode
            except OSError:
                continue
            if not stat.S_ISREG(mode):
                continue
        if stat.S_ISDIR(mode) and mode & 0o005 != 0o005 or stat.S_ISREG(mode) and not mode & 0o004:
            return False
    return _others_can_reach(root)


class Executor:
    """Runs scripts in `workdir` (never the data folder) and checks the data folder is untouched.

    Every script runs through a sandbox worker (worker.py) inside the chosen isolation tier
    (tiers.py): warm, one worker per run forks each script from a process that already imported
    pandas; cold (`warm=False`), a fresh worker serves each script. Both paths enforce the same
    tier. The script's source is kept in `scripts_dir`, out of the script's reach; the only place
    it can write is `workdir`, and nothing here opens a path in `workdir` through a link."""

    def __init__(self, workdir: Path, data_dir: Path, timeout_s: float, memory_mb: int = 4096,
                 max_output_bytes: int = 1_000_000, tier: str = "auto", require: str = "basic",
                 warm: bool = True, max_workdir_mb: int = 2048, scripts_dir: Path | None = None,
                 follow_links: bool = False, strong_backend: str = "auto", memory_cgroup: bool = True):
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir.resolve()
        self.data_dir = data_dir.resolve()
        self.scripts_dir = (scripts_dir or workdir.parent / "scripts").resolve()
        self.scripts_dir.mkdir(parents=True, exist_ok=True)
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.memory_cgroup = memory_cgroup  # False: the worker's watchdog even where a cgroup could be made.
        self.max_output_bytes = max_output_bytes
        self.max_workdir_mb = max_workdir_mb
        self._secrets = secret_values()
        self.tier = tiers.for_scripts(tier, require)
        self.warning = tiers.auto_warning(tier, self.tier)  # Basic chosen by `auto`: said on every run.
        self.backend = tiers.strong_backend(strong_backend) if self.tier == "strong" else None
        self.warm = warm
        self.readable = tiers.readable_paths(self.data_dir, link_targets(self.data_dir) if follow_links else [])
        self.uid = self._unprivileged_uid()
        font_cache.give(self.workdir, self.uid)  # matplotlib's font list, built once per machine.
        self.duckdb = duckdb_setup.settings(memory_mb, str(self.workdir), max_workdir_mb)
        # Where a script's dsstar.sql goes (dsstar.py): DuckDB in its own process until `use_engine`.
        self.engine: dict = {"kind": "duckdb", "views": {}, "described": {}}
        self.query_engine: QueryEngine | None = None
        self._log = self.workdir.parent / "sandbox.log"
        self._worker: WarmWorker | None = None
        if self.warm:  # Starts now: it imports pandas while the model writes the first script.
            self._worker = self._new_worker(once=False)

    def _new_worker(self, once: bool) -> WarmWorker:
        return WarmWorker(self.tier, self.workdir, self.readable, self._log, self.uid, once=once,
                          backend=self.backend, memory_mb=self.memory_mb, cgroup=self.memory_cgroup)

    def describe(self) -> dict:
        """What the result and the run folder report as `sandbox`."""
        found = tiers.probe()
        detail = tiers.strong_detail(self.backend, found.layers) if self.backend else found.details.get(self.tier, "")
        if self.tier == "medium":
            detail = found.layers + (" + network namespace" if tiers.network_namespace_works() else "")
        return {"level": self.tier, "detail": detail, "warm_worker": self.warm,
                "user": "unprivileged (nobody)" if self.uid is not None else f"uid {os.geteuid()}",
                "limits": memory_bound.how_bounded(self.memory_cgroup, nobody=self.uid is not None),
                "available": [t for t in tiers.TIERS if found.available.get(t)]}

    def _unprivileged_uid(self) -> int | None:
        """As root, scripts run as `nobody` when that user can reach the run folder and read the
        data (and its fork bombs meet RLIMIT_NPROC, which root ignores). Under bubblewrap the
        uid is bubblewrap's to map, so that backend keeps it."""
        if os.name != "posix" or os.geteuid() != 0:
            return None
        if self.backend == "bubblewrap":
            return None
        pandas = _pandas_path()
        interpreter = [Path(os.__file__), Path(sys.executable).resolve()] + ([Path(pandas)] if pandas else [])
        if not (_others_can_reach(self.workdir) and _others_can_read(self.data_dir)
                and all(_others_can_reach(path) for path in interpreter)):
            return None  # `nobody` could not run Python or read the data here: keep the uid (reported).
        os.chown(self.workdir, NOBODY, NOBODY)
        return NOBODY

    def use_engine(self, setup: dict, query_engine: QueryEngine | None = None) -> None:
        """Where scripts' dsstar.sql calls go from now on: `setup` (kind, views or tables, caps) is
        given to each script; `query_engine` (engine: spark) answers them here, over the query channel."""
        self.engine, self.query_engine = dict(setup), query_engine

    def close(self) -> None:
        if self._worker:
            self._worker.close()
            self._worker = None
        font_cache.wait()

    def run(self, code: str, name: str, timeout_s: float | None = None,
            stop: threading.Event | None = None) -> Execution:
        """Run `code` as script `name`; `timeout_s` may only shorten the executor's own limit. A `stop`
        request from another thread kills the script at once and raises its signal (KeyboardInterrupt
        or Terminated) here."""
        # A key the model echoed into its code is masked: it never runs, and never lands on disk.
        code = redact(code, self._secrets)
        script = write_private(self.scripts_dir, f"{name}.py", code)
        before = snapshot_folder(self.data_dir)
        work_before = workfolder.inventory(self.workdir)
        limit = self.timeout_s if timeout_s is None else min(self.timeout_s, timeout_s)
        worker = self._worker or self._new_worker(once=True)
        server, theirs = self._query_channel()
        try:
            execution = worker.execute(code, str(script), self._limits(limit), self.uid, limit,
                                       self.max_output_bytes, self.duckdb, stop, self.engine,
                                       theirs.fileno() if theirs else None)
        finally:
            if theirs:
                theirs.close()
                server.stop()  # The script is over: its query, if any is still running, is interrupted.
            if worker is not self._worker:
                worker.close()
        execution.stdout = redact(execution.stdout, self._secrets)
        execution.stderr = redact(execution.stderr, self._secrets)
        execution.data_changed = changed_paths(before, snapshot_folder(self.data_dir))
        execution.ok = execution.ok and not execution.data_changed
        past_cap = workfolder.enforce_cap(self.workdir, work_before, self.max_workdir_mb)
        font_cache.learn_from(self.workdir)
        if past_cap:
            execution.ok = False
            execution.stderr += "\n" + past_cap
        return execution

    def _query_channel(self) -> tuple[QueryServer | None, socket.socket | None]:
        """With a query engine (Spark): a connected socketpair, one end served here, the other for the
        script (as its descriptor 3; see query_channel.py)."""
        if self.query_engine is None:
            return None, None
        ours, theirs = socket.socketpair()
        server = QueryServer(ours, self.query_engine, self.engine.get("max_rows", 100_000),
                             self.engine.get("max_bytes", 64 << 20))
        server.start()
        return server, theirs

    def _limits(self, timeout_s: float) -> dict[str, int]:
        memory = self.memory_mb * 1024 * 1024
        return {"RLIMIT_AS": memory, "RLIMIT_CORE": 0, "RLIMIT_CPU": int(2 * timeout_s) + 5,
                "RLIMIT_FSIZE": min(self.max_workdir_mb, 1024) * 1024 * 1024, "RLIMIT_NOFILE": 1024,
                **({"RLIMIT_NPROC": 512} if self.uid is not None else {})}


def write_private(folder: Path, name: str, text: str) -> Path:
    """Write `folder/name` whole, never through a link (the folder itself is not one either)."""
    handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        replace_file(handle, name, text)
    finally:
        os.close(handle)
    return folder / name


def link_targets(data_dir: Path) -> list[str]:
    """Where the links in the data folder lead, for `follow_links` (they become readable)."""
    found = [os.path.realpath(data_dir / entry.path) for entry in fdtree.entries(data_dir)
             if stat.S_ISLNK(entry.stat.st_mode) and entry.path]
    return sorted(set(found))
