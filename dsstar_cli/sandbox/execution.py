"""What running one script gave, and the pieces both ways of running it share."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

TRUNCATION_MARKER = "\n[... output truncated by dsstar: {dropped} more bytes ...]\n"
# Variables the script may see; everything else (API keys above all) stays behind.
PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT", "TMPDIR")
MPL_FOLDER = ".matplotlib"  # matplotlib's config and font cache, in the work folder (not an artifact).


def clean_environment(workdir: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASSED_THROUGH if k in os.environ}
    env.update(
        HOME=str(workdir),
        PYTHONIOENCODING="utf-8",
        PYTHONDONTWRITEBYTECODE="1",
        # matplotlib draws headless (no display exists in any tier) and keeps its font cache and
        # config in the work folder: the only place a script may write (see FIGURES in the prompts).
        MPLBACKEND="Agg",
        MPLCONFIGDIR=str(workdir / MPL_FOLDER),
        # joblib (scikit-learn's) would probe /dev/shm for process pools, which the confined tiers
        # refuse, and warn on stderr; scripts run in one process, single-threaded (below).
        JOBLIB_MULTIPROCESSING="0",
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        # glibc gives each thread up to 64 MB of address space for its own heap; with DuckDB's or
        # pyarrow's thread pools that alone can exhaust the address-space cap (RLIMIT_AS).
        MALLOC_ARENA_MAX="2",
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


class CappedReader(threading.Thread):
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


