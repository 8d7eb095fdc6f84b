"""Run one generated script in its own process: clean environment, limits, deadline, capped output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dsstar_cli.sandbox import tiers
from dsstar_cli.sandbox.execution import CappedReader, Execution, clean_environment
from dsstar_cli.sandbox.integrity import changed_paths, snapshot_folder
from dsstar_cli.sandbox.worker_client import NOBODY, WarmWorker
from dsstar_cli.secrets import redact, secret_values

BOOTSTRAP = Path(__file__).with_name("bootstrap.py")


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
    for dirpath, _, filenames in os.walk(root):
        if os.stat(dirpath).st_mode & 0o005 != 0o005:
            return False
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and not os.stat(path).st_mode & 0o004:
                return False
    return _others_can_reach(root)


class Executor:
    """Runs scripts in `workdir` (never the data folder) and checks the data folder is untouched.

    On Linux a warm worker (worker.py) forks each script from a process that already imported
    pandas, inside the chosen isolation tier (tiers.py); elsewhere, or with `warm=False`, each
    script is a fresh `python -I bootstrap.py` process (basic tier)."""

    def __init__(self, workdir: Path, data_dir: Path, timeout_s: float, memory_mb: int = 4096,
                 max_output_bytes: int = 1_000_000, tier: str = "auto", require: str = "basic",
                 warm: bool = True, max_workdir_mb: int = 2048):
        self.workdir = workdir
        self.data_dir = data_dir
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.max_output_bytes = max_output_bytes
        self.max_workdir_mb = max_workdir_mb
        self._secrets = secret_values()
        workdir.mkdir(parents=True, exist_ok=True)
        linux = sys.platform.startswith("linux") and hasattr(os, "pidfd_open")
        self.tier = tiers.choose(tier, require) if linux else tiers.choose("basic", require)
        self.warm = warm and linux
        self.uid = self._unprivileged_uid()
        self._worker: WarmWorker | None = None
        if self.warm:  # Starts now: it imports pandas while the model writes the first script.
            self._worker = WarmWorker(self.tier, workdir, data_dir, workdir.parent / "sandbox.log")

    def describe(self) -> dict:
        """What the result and the run folder report as `sandbox`."""
        found = tiers.probe()
        return {"level": self.tier, "detail": found.details.get(self.tier, ""), "warm_worker": self.warm,
                "user": "unprivileged (nobody)" if self.uid is not None else f"uid {os.geteuid()}",
                "available": [t for t in tiers.TIERS if found.available.get(t)]}

    def _unprivileged_uid(self) -> int | None:
        """As root, scripts run as `nobody` when that user can reach the run folder and read the
        data; bubblewrap already drops every capability, so the strong tier keeps the uid."""
        if os.name != "posix" or os.geteuid() != 0 or self.tier == "strong":
            return None
        pandas = _pandas_path()
        interpreter = [Path(os.__file__), Path(sys.executable).resolve()] + ([Path(pandas)] if pandas else [])
        if not (_others_can_reach(self.workdir) and _others_can_read(self.data_dir)
                and all(_others_can_reach(path) for path in interpreter)):
            return None  # `nobody` could not run Python or read the data here: keep the uid (reported).
        os.chown(self.workdir, NOBODY, NOBODY)
        return NOBODY

    def close(self) -> None:
        if self._worker:
            self._worker.close()
            self._worker = None

    def run(self, code: str, name: str, timeout_s: float | None = None) -> Execution:
        """Run `code` as script `name`; `timeout_s` may only shorten the executor's own limit."""
        script = self.workdir / f"{name}.py"
        # A key the model echoed into its code is masked: it never runs, and never lands on disk.
        script.write_text(redact(code, self._secrets), encoding="utf-8")
        before = snapshot_folder(self.data_dir)
        limit = self.timeout_s if timeout_s is None else min(self.timeout_s, timeout_s)
        started = time.time()
        if self._worker is not None:
            execution = self._worker.execute(script, self._limits(limit), self.uid, limit, self.max_output_bytes)
        else:
            execution = self._run_process(script, limit)
        execution.data_changed = changed_paths(before, snapshot_folder(self.data_dir))
        execution.ok = execution.ok and not execution.data_changed
        self._enforce_workdir_cap(execution, started)
        return execution

    def _limits(self, timeout_s: float) -> dict[str, int]:
        memory = self.memory_mb * 1024 * 1024
        return {"RLIMIT_AS": memory, "RLIMIT_CORE": 0, "RLIMIT_CPU": int(2 * timeout_s) + 5,
                "RLIMIT_FSIZE": min(self.max_workdir_mb, 1024) * 1024 * 1024, "RLIMIT_NOFILE": 1024,
                **({"RLIMIT_NPROC": 512} if self.uid is not None else {})}

    def _enforce_workdir_cap(self, execution: Execution, started: float) -> None:
        """Files a script wrote past the run folder's cap are removed and the step fails."""
        files = [p for p in self.workdir.rglob("*") if p.is_file()]
        total = sum(p.stat().st_size for p in files)
        if total <= self.max_workdir_mb * 1024 * 1024:
            return
        for path in files:
            if path.stat().st_mtime >= started and path.suffix != ".py":
                path.unlink(missing_ok=True)
        execution.ok = False
        execution.stderr += (f"\n[dsstar: the script wrote past the run folder's cap of {self.max_workdir_mb} MB; "
                             "its new files were removed]")

    def _run_process(self, script: Path, timeout_s: float) -> Execution:
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-I", str(BOOTSTRAP), str(self.memory_mb), str(script)],
            cwd=self.workdir,
            env=clean_environment(self.workdir),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # Its own process group, so the deadline kills every child.
        )
        readers = [CappedReader(proc.stdout, self.max_output_bytes), CappedReader(proc.stderr, self.max_output_bytes)]
        for reader in readers:
            reader.start()
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(proc)  # Also sweeps children left behind by a script that exited.
        for reader in readers:
            reader.join(timeout=2)  # A daemonised grandchild may hold the pipe; don't wait on it.
        return Execution(
            ok=proc.returncode == 0 and not timed_out,
            exit_code=None if timed_out else proc.returncode,
            stdout=readers[0].text(),
            stderr=readers[1].text(),
            seconds=time.monotonic() - started,
            timed_out=timed_out,
        )


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
