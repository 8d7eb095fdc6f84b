"""Built-in profiling under hard bounds, in child processes: a hostile file (a zip bomb, a 500 MB
line, a parser's worst case) costs a child its memory or its time, never dsstar's own process.

Each child (`python -I -m dsstar_cli.analyzer.bounded MEMORY_MB`) runs with an address-space limit
and profiles one file per request (a JSON line in, a JSON line out). The parent gives each file a
wall-clock deadline: past it, or when the child dies, the child is killed and replaced, and the file
is described by what is known without reading it (its type and size) with a note saying which
bound it hit. Only the built-in profilers run here; the model's describer stays in the parent.
"""

from __future__ import annotations

import json
import os
import queue
import resource
import select
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from dsstar_cli.analyzer.limits import AnalyzerLimits

START_TIMEOUT_S = 30.0
BUDGET_GONE = "the run's time budget (--timeout) ran out first"


class Child:
    """One profiling process; `profile` answers a request or says which bound stopped it."""

    def __init__(self, memory_mb: int):
        self.memory_mb = memory_mb
        self.proc = subprocess.Popen([sys.executable, "-I", "-m", "dsstar_cli.analyzer.bounded", str(memory_mb)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True)  # Ctrl-C is the parent's to handle.
        self._buffer = b""

    def profile(self, request: dict, seconds: float) -> tuple[dict | None, str | None]:
        """(the description's fields, None), or (None, why it was stopped)."""
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            return None, "the profiling process died"
        deadline = time.monotonic() + seconds
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, f"profiling stopped at the {seconds:g} s time bound"
            ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    return None, f"profiling ran out of the {self.memory_mb} MB memory bound or crashed"
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        fields = json.loads(line)
        return (None, fields["stopped"]) if "stopped" in fields else (fields, None)

    def kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass


Job = tuple[int, Path, "Path | dict"]              # (index, root, relative path or a dataset's fields)
Stopped = Callable[[Path, Path, str], dict]       # what to say of a file whose profiling was stopped


def profile_all(jobs: list[Job], limits: AnalyzerLimits, workers: int, stopped: Stopped,
                on_done: Callable[[int, dict], None], deadline: float | None = None) -> None:
    """Profile every job in `workers` children; `on_done(index, fields)` as each file finishes (from
    worker threads, one at a time). Past `deadline` (time.monotonic()) no file is profiled any
    more. Children are killed on the way out, whatever happens."""
    pending: queue.Queue[Job] = queue.Queue()
    for job in jobs:
        pending.put(job)
    lock, children, failures = threading.Lock(), [], []

    def work() -> None:
        child = None
        try:
            while True:
                try:
                    index, root, relative = pending.get_nowait()
                except queue.Empty:
                    return
                request = {"root": str(root), "relative": str(relative), "limits": asdict(limits)}
                if isinstance(relative, dict):  # Many files described as one (datasets.py).
                    request.update(relative=relative["path"], dataset=relative)
                    relative = Path(relative["path"])
                left = limits.seconds_per_file if deadline is None else deadline - time.monotonic()
                if left <= 0:
                    with lock:
                        on_done(index, stopped(root, relative, BUDGET_GONE))
                    continue
                if child is None:
                    child = Child(limits.memory_mb)
                    with lock:
                        children.append(child)
                fields, why = child.profile(request, min(limits.seconds_per_file, left))
                if fields is None:
                    child.kill()
                    child = None
                    if left < limits.seconds_per_file and time.monotonic() >= deadline:
                        why = BUDGET_GONE
                    fields = stopped(root, relative, why)
                with lock:
                    on_done(index, fields)
        except BaseException as exc:  # noqa: B036 - reported to the caller's thread below
            failures.append(exc)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(max(1, min(workers, len(jobs))))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.1)  # Short waits: Ctrl-C reaches the main thread at once.
    finally:
        for child in children:
            child.kill()
    if failures:
        raise failures[0]


def serve(memory_mb: int) -> None:
    """The child: profile one file per request line, answer one line each."""
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    from dsstar_cli.analyzer import datasets, duplicates, profile_builtin  # After the limit: imports count too.

    try:  # Mapped now, while the address space is free: imported lazily after a file filled most of
        import pandas  # noqa: F401  # the bound, its shared objects could not be mapped (ImportError).
    except (ImportError, MemoryError):
        pass  # A bound too small for pandas: each table then says why it could not be profiled.

    for line in sys.stdin:
        request = json.loads(line)
        limits = AnalyzerLimits(**request["limits"])
        try:
            if "dataset" in request:
                fields = datasets.profile(Path(request["root"]), request["dataset"], limits)
            elif "duplicates" in request:  # Tables compared by their rows (duplicates.py).
                fields = {"relations": duplicates.rows_relations(Path(request["root"]), request["duplicates"],
                                                                      request["seconds"])}
            else:
                fields = profile_builtin(Path(request["root"]), Path(request["relative"]), limits)
        except MemoryError:  # Even describing the failure ran out: the parent says which bound.
            fields = {"stopped": f"profiling ran out of the {memory_mb} MB memory bound"}
        sys.stdout.write(json.dumps(fields) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
