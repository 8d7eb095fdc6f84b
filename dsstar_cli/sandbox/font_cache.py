"""matplotlib's font list, built once per machine by dsstar and given to every run that draws.

matplotlib scans the system's fonts the first time it runs with a new config folder and writes the
result there (`fontlist-vNNN.json`): 3-5 s of a chart script's time. Each run's config folder is
its own work folder (execution.MPL_FOLDER), so every run that drew paid it again.

Now dsstar keeps one list in its cache folder and copies it into a work folder's config folder
before the scripts run (`give`). The list is built by dsstar's own child process (`python -c
"import matplotlib.font_manager"` with that cache folder as its config folder: the interpreter the
scripts run, reading the fonts they read), never taken from a script: a script can spoil only its
own run's copy. It is built in the background the first time a script of this machine draws (its
work folder got a font list of its own: `learn_from`), so a run that never draws never pays for it;
the executor waits for that build when it closes (`wait`), so no process of ours outlives the run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from dsstar_cli.sandbox.execution import MPL_FOLDER

PATTERN = "fontlist-*.json"
BUILD_TIMEOUT_S = 120
_building = threading.Lock()


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/dsstar/matplotlib, else ~/.cache/dsstar/matplotlib."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dsstar" / "matplotlib"


def give(workdir: Path, uid: int | None = None) -> bool:
    """Copy the machine's font list into `workdir`'s matplotlib folder, owned by `uid` (the user
    scripts run as, when not ours: matplotlib writes there too); False when there is none yet.
    Only into a folder made here and now: one a script left (a resumed run's) may be a link."""
    lists = sorted(cache_dir().glob(PATTERN))
    if not lists:
        return False
    target = workdir / MPL_FOLDER
    try:
        target.mkdir(mode=0o755)
        for found in lists:
            shutil.copyfile(found, target / found.name, follow_symlinks=False)
        if uid is not None:
            for path in [target, *target.iterdir()]:
                os.lchown(path, uid, uid)
    except OSError:
        return False
    return True


def learn_from(workdir: Path) -> None:
    """After a script ran: when it drew (its config folder got a font list) and the machine has none
    yet, build the machine's list in the background, with our own process (see the module docstring)."""
    if not any((workdir / MPL_FOLDER).glob(PATTERN)) or any(cache_dir().glob(PATTERN)):
        return
    if _building.acquire(blocking=False):  # One build at a time in this process; a batch's runs share it.
        threading.Thread(target=_build, name="dsstar-font-cache", daemon=True).start()


def wait() -> None:
    """Let a build this process started finish (dsstar leaves no process behind)."""
    if _building.acquire(timeout=BUILD_TIMEOUT_S + 5):
        _building.release()


def _build() -> None:
    try:
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as scratch:
            env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "HOME")}
            env.update(MPLCONFIGDIR=scratch, MPLBACKEND="Agg")
            subprocess.run([sys.executable, "-I", "-c", "import matplotlib.font_manager"], env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=BUILD_TIMEOUT_S, check=False)
            for built in Path(scratch).glob(PATTERN):
                os.replace(built, folder / built.name)  # Atomic: a reader sees the whole list or none.
    except (OSError, subprocess.SubprocessError):
        pass  # Scripts build their own, as before.
    finally:
        _building.release()
