"""The executor's side of the warm worker: start it inside the chosen tier (with the cgroup that
bounds its scripts' memory together, where one can be made), send it one script at a time with the
pipes for its output, enforce the deadline, and restart it if it ever dies."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from dsstar_cli.deadlines import POLL_S
from dsstar_cli.errors import SetupError, stop_signal
from dsstar_cli.sandbox import memory_bound, tiers
from dsstar_cli.sandbox.execution import CappedReader, Execution, clean_environment

WORKER = Path(__file__).with_name("worker.py")
NOBODY = 65534
PRELOAD = ["numpy", "pandas", "sqlglot"]  # sqlglot: dsstar.sql checks every statement with it
START_TIMEOUT_S = 60.0
KILL_GRACE_S = 10.0
PRIVATE_TMP_MB = 256
MARK = "DSSTAR_SANDBOX"


def bubblewrap_argv(readable: list[str], workdir: Path) -> list[str]:
    """Bubblewrap's namespaces around the worker: the allowlist read-only, the work folder writable."""
    argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--proc", "/proc", "--dev", "/dev",
            "--size", str(PRIVATE_TMP_MB * 1024 * 1024), "--tmpfs", "/tmp"]
    for path in dict.fromkeys(os.path.abspath(p) for p in readable):
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            argv += ["--ro-bind", path, path]
    here = str(WORKER.parent)  # The worker and its sibling modules, read-only.
    return argv + ["--ro-bind", here, here, "--bind", str(workdir), str(workdir), "--chdir", str(workdir)]


def worker_config(tier: str, workdir: Path, readable: list[str], uid: int | None, once: bool,
                  backend: str | None = None, memory_mb: int | None = None,
                  cgroup: memory_bound.Cgroup | None = None) -> dict:
    """What the worker enforces for `tier` (see worker.py for the keys; the cgroup's descriptors
    are added at each start)."""
    found = tiers.probe()
    config = {"preload": [] if once else PRELOAD, "once": once, "readable": readable,
              "writable": [str(workdir)], "keep_uid": uid, "tmp_mb": PRIVATE_TMP_MB, "memory_mb": memory_mb,
              "cgroup_files": cgroup.limit_files() if cgroup else []}
    if tier == "strong":
        config.update(isolation=backend or found.strong_backend, landlock=found.landlock_abi, seccomp=True)
    elif tier == "medium":
        config.update(isolation="landlock", landlock=found.landlock_abi, seccomp=True, ungoverned=True,
                      network="isolate" if tiers.network_namespace_works() else None)
    else:
        config.update(isolation="none")
    return config


class WarmWorker:
    """One worker process in the tier's isolation; `once` makes it a cold one, for a single script."""

    def __init__(self, tier: str, workdir: Path, readable: list[str], log: Path, uid: int | None = None,
                 once: bool = False, backend: str | None = None, memory_mb: int | None = None,
                 cgroup: bool = True):
        self.tier, self.workdir, self.log = tier, workdir, log
        # memory_mb for the scripts' processes together: a cgroup's, else the worker's watchdog.
        self.cgroup = memory_bound.Cgroup.make(memory_mb) if memory_mb and cgroup else None
        self.config = worker_config(tier, workdir, readable, uid, once, backend, memory_mb, self.cgroup)
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.mark = secrets.token_hex(12)  # In the environment of every process of this worker's scripts.
        self._start()

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        cgroup = self.cgroup.open() if self.cgroup else None
        config = {**self.config, "fd": theirs.fileno(), "cgroup": cgroup}
        argv = [sys.executable, "-I", str(WORKER), json.dumps(config)]
        if self.config["isolation"] == "bubblewrap":
            argv = bubblewrap_argv(self.config["readable"], self.workdir) + argv
        env = {**clean_environment(self.workdir), "TMPDIR": str(self.workdir), MARK: self.mark}
        with self.log.open("ab") as log:
            inherited = (theirs.fileno(), *(cgroup["procs"] + [cgroup["events"]] if cgroup else []))
            self.proc = subprocess.Popen(argv, pass_fds=inherited, env=env, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, cwd=self.workdir, start_new_session=True)
        theirs.close()
        self.sock, self._ready, self._partial = ours, False, b""

    def _await_ready(self, stop: threading.Event | None = None) -> None:
        """Wait for the worker's "ready" line (its interpreter and preloads), looking at the `stop`
        request every poll: a loaded machine can take many seconds to start it."""
        if self._ready:
            return
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while True:
                if stop is not None and stop.is_set():
                    self._kill()  # Half started: the next script gets a new worker.
                    raise stop_signal(stop)
                self.sock.settimeout(max(min(deadline - time.monotonic(), POLL_S), 0.001))
                try:
                    reply = self._read()
                    break
                except socket.timeout:
                    if time.monotonic() >= deadline:
                        raise
        except (OSError, ValueError) as exc:
            tail = self.log.read_text(errors="replace")[-600:] if self.log.exists() else ""
            raise SetupError(f"the {self.tier} sandbox could not start: {exc}; {tail.strip()}") from exc
        if not reply.get("ready"):
            raise SetupError(f"the {self.tier} sandbox could not start: {reply}")
        self._ready = True

    def _read(self) -> dict:
        """The worker's next reply line; a timeout keeps what was read of it for the next call."""
        while not self._partial.endswith(b"\n"):
            chunk = self.sock.recv(1)
            if not chunk:
                self._partial = b""
                raise ConnectionError("the sandbox worker exited")
            self._partial += chunk
        line, self._partial = self._partial, b""
        return json.loads(line)

    def execute(self, code: str, filename: str, limits: dict, uid: int | None, timeout_s: float,
                max_output: int, duckdb: dict | None = None, stop: threading.Event | None = None,
                engine: dict | None = None, query_fd: int | None = None) -> Execution:
        """Run `code` (shown in tracebacks as `filename`, a file the script itself cannot reach);
        `duckdb`: DuckDB's settings, applied when the script imports it (duckdb_setup.py); `engine`:
        where `dsstar.sql` goes (dsstar.py), with `query_fd` the script's end of the query channel
        (engine: spark), passed like its pipes. A `stop`
        request (set from another thread) kills the script as its deadline would, then raises the
        stop's signal."""
        if self.proc is None or self.proc.poll() is not None:  # Killed by a runaway script: start again.
            self._start()
        self._await_ready(stop)
        if stop is not None and stop.is_set():
            raise stop_signal(stop)  # Asked to stop before the script was sent: it never runs.
        started = time.monotonic()
        kills = self.cgroup.oom_kills() if self.cgroup else 0
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        request = {"code": code, "filename": filename, "workdir": str(self.workdir), "limits": limits, "uid": uid,
                   "duckdb": duckdb, "engine": engine}
        payload = json.dumps(request).encode() + b"\n"
        readers = [CappedReader(os.fdopen(out_r, "rb"), max_output), CappedReader(os.fdopen(err_r, "rb"), max_output)]
        try:
            passed = [out_w, err_w] + ([query_fd] if query_fd is not None else [])
            sent = socket.send_fds(self.sock, [payload], passed)
            if sent < len(payload):  # A long script may not fit in one message. (Never send nothing: a
                self.sock.sendall(payload[sent:])  # cold worker may have run a short script and gone.)
        finally:
            os.close(out_w)
            os.close(err_w)
        for reader in readers:
            reader.start()
        status, timed_out, over = self._wait(started + timeout_s, stop)
        if status is None and not over and self.cgroup and self.cgroup.oom_kills() > kills:
            over = memory_bound.over_line(self.cgroup.limit_mb)  # The kernel picked the worker itself.
        for reader in readers:
            reader.join(timeout=2)
        if stop is not None and stop.is_set():
            raise stop_signal(stop)
        exit_code = None if timed_out or status is None else os.waitstatus_to_exitcode(status)
        stderr = readers[1].text()
        if over:  # Said where the script's own errors are, as the kernel's MemoryError would be.
            stderr += ("" if stderr.endswith("\n") or not stderr else "\n") + over + "\n"
        return Execution(ok=exit_code == 0 and not timed_out and not over, exit_code=exit_code,
                         stdout=readers[0].text(), stderr=stderr, seconds=time.monotonic() - started,
                         timed_out=timed_out)

    def _wait(self, deadline: float, stop: threading.Event | None) -> tuple[int | None, bool, str | None]:
        """(wait status, timed out, the worker's line when the script's processes passed memory_mb).
        Past the deadline, or on a stop request, the worker kills the script's processes."""
        timed_out = False
        while True:
            remaining = deadline - time.monotonic()
            if stop is not None and not timed_out:
                remaining = min(remaining, POLL_S) if not stop.is_set() else 0
            self.sock.settimeout(max(remaining, 0.001) if not timed_out else KILL_GRACE_S)
            try:
                reply = self._read()
            except socket.timeout:
                if timed_out:  # The worker itself is stuck: end it; the next script gets a new one.
                    self._kill()
                    return None, True, None
                if time.monotonic() < deadline and not (stop is not None and stop.is_set()):
                    continue  # Only a look at the stop request.
                timed_out = True
                self.sock.sendall(b'{"kill": true}\n')
                continue
            except (OSError, ValueError):
                self._kill()
                return None, timed_out, None
            if "status" in reply:
                return reply["status"], timed_out, reply.get("memory")

    def _kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
        if self.sock:
            self.sock.close()
        self.proc = None
        self._last_sweep()  # A worker that died (killed by its script, in basic) swept nothing.

    def close(self) -> None:
        if self.sock:
            self.sock.close()
            self.sock = None
        if self.proc:
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._kill()
            self.proc = None
        self._last_sweep()
        if self.cgroup:  # Empty now: the worker and every script's process are gone.
            self.cgroup.remove()
            self.cgroup = None

    def _last_sweep(self) -> None:
        """Without a pid namespace (medium, basic) nothing else kills what a dead worker's scripts left."""
        if self.config["isolation"] in ("landlock", "none"):
            kill_marked(self.mark, self.workdir)


def kill_marked(mark: str, workdir: Path, scans: int = 3) -> None:
    """Kill every process whose environment carries `mark` or whose working folder is in `workdir`:
    the last sweep, for the tiers without a pid namespace, when the worker that should have swept
    is gone. (A process can hide from it by clearing its environment and leaving the work folder;
    the strong tier does not rely on it.)"""
    needle, inside = f"{MARK}={mark}".encode(), str(workdir)
    for _ in range(scans):
        found = False
        for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as environ:
                    marked = needle in environ.read().split(b"\0")
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                continue
            if marked or cwd == inside or cwd.startswith(inside + os.sep):
                found = True
                try:
                    os.kill(int(entry), signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        if not found:
            return
        time.sleep(0.01)
