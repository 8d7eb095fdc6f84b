"""Run one generated script in its own process: clean environment, limits, deadline, capped output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from dsstar_cli.sandbox.integrity import changed_paths, snapshot_folder
from dsstar_cli.secrets import redact, secret_values

BOOTSTRAP = Path(__file__).with_name("bootstrap.py")
TRUNCATION_MARKER = "\n[... output truncated by dsstar: {dropped} more bytes ...]\n"
# Variables the script may see; everything else (API keys above all) stays behind.
PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT", "TMPDIR")


def clean_environment(workdir: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASSED_THROUGH if k in os.environ}
    env.update(
        HOME=str(workdir),
        PYTHONIOENCODING="utf-8",
        PYTHONDONTWRITEBYTECODE="1",
        MPLBACKEND="Agg",
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    return env


@dataclass
class Execution:
    ok: bool
    exit_code: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    data_changed: list[str] = field(default_factory=list)

    def failure(self) -> str:
        """What went wrong, for the debugger and the user ('' when it went right)."""
        if self.data_changed:
            return "the script changed the read-only data folder: " + ", ".join(self.data_changed[:10])
        if self.timed_out:
            return f"the script was killed after running past the time limit ({self.seconds:.1f}s)"
        if not self.ok:
            return self.stderr.strip() or f"the script exited with code {self.exit_code} and no error output"
        return ""


class _CappedReader(threading.Thread):
    """Drain a pipe, keeping the first `limit` bytes: a chatty script cannot exhaust memory."""

    def __init__(self, pipe, limit: int):
        super().__init__(daemon=True)
        self.pipe, self.limit = pipe, limit
        self.kept = bytearray()
        self.dropped = 0

    def run(self) -> None:
        for chunk in iter(lambda: self.pipe.read(65536), b""):
            room = self.limit - len(self.kept)
            self.kept += chunk[:room]
            self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        return text + TRUNCATION_MARKER.format(dropped=self.dropped) if self.dropped else text


class Executor:
    """Runs scripts in `workdir` (never the data folder) and checks the data folder is untouched."""

    def __init__(self, workdir: Path, data_dir: Path, timeout_s: float, memory_mb: int = 4096,
                 max_output_bytes: int = 1_000_000):
        self.workdir = workdir
        self.data_dir = data_dir
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.max_output_bytes = max_output_bytes
        self._secrets = secret_values()
        workdir.mkdir(parents=True, exist_ok=True)

    def run(self, code: str, name: str, timeout_s: float | None = None) -> Execution:
        """Run `code` as script `name`; `timeout_s` may only shorten the executor's own limit."""
        script = self.workdir / f"{name}.py"
        # A key the model echoed into its code is masked: it never runs, and never lands on disk.
        script.write_text(redact(code, self._secrets), encoding="utf-8")
        before = snapshot_folder(self.data_dir)
        limit = self.timeout_s if timeout_s is None else min(self.timeout_s, timeout_s)
        execution = self._run_process(script, limit)
        execution.data_changed = changed_paths(before, snapshot_folder(self.data_dir))
        execution.ok = execution.ok and not execution.data_changed
        return execution

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
        readers = [_CappedReader(proc.stdout, self.max_output_bytes), _CappedReader(proc.stderr, self.max_output_bytes)]
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
