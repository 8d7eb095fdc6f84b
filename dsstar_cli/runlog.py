"""The run folder: every prompt, reply, script, output and event of one run, secrets redacted.

Layout:  <run_dir>/<id>/events.jsonl      one event per line, flushed as it happens
                        calls/0001-planner.json   messages sent and reply received
                        scripts/           the generated scripts and their captured output
                                           (NNN-roundRR-purpose.py, .stdout.txt, .stderr.txt):
                                           dsstar writes here, scripts cannot
                        work/              the scripts' working folder, the only place they may write;
                                           what they leave there are the run's artifacts
                        state.json         the checkpoint `dsstar resume` continues from
                        result.json        the final result (the `--json` object)

While a process works on a run (`ask`, or `resume`), it holds events.jsonl locked (flock, released
when the process ends, by kill -9 too): `dsstar runs rm` and `prune` leave such a run alone, and a
second `resume` of a run still going is refused.

A script may leave anything in work/, links included, so dsstar's own writes never follow a link:
folders are opened one component at a time with O_NOFOLLOW, files are created with O_EXCL under a
random name and renamed into place, and artifacts are collected without following links.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import secrets as _random
import stat
import tempfile
import time
from pathlib import Path, PurePath

from dsstar_cli import fdtree
from dsstar_cli.errors import SetupError
from dsstar_cli.events import Event
from dsstar_cli.model import Messages, Reply
from dsstar_cli.safewrite import replace_file
from dsstar_cli.secrets import redact, secret_values

# Names our own scripts and outputs had in work/ before they moved to scripts/ (old resumed runs).
OLD_SCRIPT_FILE = re.compile(r"\d{3}-round\d{2}-.*\.(py|stdout\.txt|stderr\.txt)")


class RunFolderError(SetupError):
    """The run folder cannot be created or written (permissions, a full disk, a planted link)."""


def inside(path: Path, folder: Path) -> bool:
    """`path` is `folder` or lies below it, once both are resolved (links and `..` followed)."""
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def user_data_dir() -> Path:
    """$XDG_DATA_HOME/dsstar, else ~/.local/share/dsstar (the user data dir on Linux)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "dsstar"


def private_temp_dir() -> Path:
    """dsstar's per-user folder in the system temp dir (see `claim_private_dir`)."""
    return Path(tempfile.gettempdir()) / f"dsstar-{os.getuid()}"


def run_root_candidates(configured: Path | str | None) -> list[Path]:
    """Where run folders may go, best first: run_dir (when set), the user data dir, then the temp dir.

    With run_dir unset (the default) every run of the user lands in one place, the user data dir, so
    `dsstar runs` lists them all wherever they were started."""
    fallbacks = [user_data_dir() / "runs", private_temp_dir() / "runs"]
    return ([Path(configured).expanduser()] if configured else []) + fallbacks


def choose_run_root(data_dir: Path, candidates: list[Path]) -> Path:
    """The first candidate that is outside the data folder (which must never change) and writable.

    Raises RunFolderError, with one line naming every refused place, when there is none.
    """
    refused = []
    for root in candidates:
        # Checked before anything is created, so not even an empty folder appears in the data folder.
        why = "inside the data folder" if inside(root, data_dir) else unwritable(root)
        if why is None:
            return root.resolve()
        refused.append(f"{root} ({why})")
    raise RunFolderError(f"no place for run folders outside the data folder {data_dir}: tried "
                         f"{'; '.join(refused)}; set run_dir to a writable folder outside it")


def unwritable(root: Path) -> str | None:
    """Why run folders cannot be created under `root`, or None once it exists and takes a file."""
    try:
        if root.parent == private_temp_dir():
            claim_private_dir(root.parent)
        root.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(dir=root, prefix=".probe-")
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def claim_private_dir(folder: Path) -> None:
    """Make `folder`, in the shared temp dir, ours alone (mode 0700).

    Anyone can create names in the temp dir: a folder or link planted there by another user would
    let them read our runs or redirect our writes, so it is refused rather than used.
    """
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise OSError(errno.EPERM, f"{folder} is a link, not a folder, or not ours")
    if st.st_mode & 0o077:
        os.chmod(folder, 0o700)


def lock_journal(fd: int) -> bool:
    """Lock the journal open as `fd` for this process (see the module's docstring); False when another
    process holds it. The lock lasts while `fd` is open, whatever else happens to the folder."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


# A folder for work that is not a run (a batch's shared analysis): hidden, never a run id, so
# `dsstar runs` does not list it; removed when that work is done.
SCRATCH_PREFIX = ".scratch-"


class RunFolder:
    def __init__(self, path: Path, resume: bool = False):
        """A new run folder, or (`resume`) an existing one whose calls and events are appended to."""
        self.path = path
        self.work = path / "work"
        self.scripts = path / "scripts"
        self._secrets = secret_values()
        self._calls = len(list((path / "calls").glob("*.json"))) if resume else 0
        try:
            (path / "calls").mkdir(parents=True, exist_ok=resume)
            self.work.mkdir(exist_ok=resume)
            self.scripts.mkdir(exist_ok=resume)  # A resumed run from before scripts/ existed gets one.
            journal = os.open(path / "events.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                              | os.O_CLOEXEC, 0o600)
            self._journal = os.fdopen(journal, "a", encoding="utf-8")
        except OSError as exc:
            verb = "reopen" if resume else "create"
            raise RunFolderError(f"cannot {verb} the run folder {path}: {exc.strerror or exc}") from exc
        if not lock_journal(self._journal.fileno()):
            self._journal.close()
            raise RunFolderError(f"the run {path.name} is in use by another dsstar process (still running?)")

    @classmethod
    def create(cls, root: Path, prefix: str = "") -> "RunFolder":
        """A new folder `<prefix><YYYYmmdd-HHMMSS>-<hex>` under `root`: with no prefix, a run's (its
        name is the run id); with one, a folder the history does not list (see SCRATCH_PREFIX)."""
        run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + _random.token_hex(3)
        return cls(root / f"{prefix}{run_id}")

    def _clean(self, text: str) -> str:
        return redact(text, self._secrets)

    def __call__(self, event: Event) -> None:
        """Journal sink: append and flush, so a crash loses at most the event in flight."""
        try:
            self._journal.write(self._clean(json.dumps(event.as_dict(), ensure_ascii=False, default=str)) + "\n")
            self._journal.flush()
        except OSError as exc:
            raise self._write_error(exc) from exc

    def write(self, relative: str, text: str) -> Path:
        """Write `text` (redacted) to `relative`, whole or not at all, never through a link."""
        target = PurePath(relative)
        if target.is_absolute() or ".." in target.parts:
            raise ValueError(f"not a path inside the run folder: {relative}")
        try:
            folder = self._open_folder(target.parent)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise RunFolderError(f"refusing to write {self.path / relative}: a folder on the way is a link "
                                     "or a file (planted by a script?)") from exc
            raise self._write_error(exc) from exc
        try:
            replace_file(folder, target.name, self._clean(text))
        except OSError as exc:
            raise self._write_error(exc) from exc
        finally:
            os.close(folder)
        return self.path / relative

    def _open_folder(self, relative: PurePath) -> int:
        """A descriptor of the folder `relative` (created if missing), opened one component at a time
        without following a link, so a link planted in place of a folder is refused, not followed."""
        folder = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for part in relative.parts:
                try:
                    os.mkdir(part, dir_fd=folder)
                except FileExistsError:
                    pass
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
                os.close(folder)
                folder = child
        except BaseException:
            os.close(folder)
            raise
        return folder

    def _write_error(self, exc: OSError) -> RunFolderError:
        hint = " (free some disk space, or point run_dir elsewhere)" if exc.errno in (errno.ENOSPC, errno.EFBIG) \
            else " (check run_dir in the config)"
        return RunFolderError(f"cannot write the run folder {self.path}: {exc.strerror or exc}{hint}")

    def save_call(self, role: str, messages: Messages, reply: Reply, seconds: float) -> None:
        self._calls += 1
        record = {"role": role, "model": reply.model, "seconds": round(seconds, 3), "messages": messages,
                  "reply": reply.text, "usage": {"input_tokens": reply.input_tokens,
                                                 "output_tokens": reply.output_tokens, "cost_usd": reply.cost_usd}}
        self.write(f"calls/{self._calls:04d}-{role}.json", json.dumps(record, indent=1, ensure_ascii=False))

    def close(self) -> None:
        if not self._journal.closed:
            self._journal.close()

    def discard(self) -> None:
        """Remove the folder of a run that did nothing worth keeping (its model check failed)."""
        self.close()
        try:
            fdtree.remove_path(self.path)
        except OSError:
            pass

    def artifacts(self) -> list[str]:
        """Regular files the scripts left in work/, relative to the run folder.

        The walk (by descriptor: no depth or path length a script leaves can break it) never follows
        a link and never lists one: a script could point a link at any file of the user's, and
        whatever is listed here is shown and may be opened. A file whose path is past PATH_MAX is
        not listed (nothing could open it by that path); a tree that cannot be walked to its end
        gives what was found before.
        """
        found = []
        try:
            for entry in fdtree.entries(self.work):
                path = entry.path
                if path and _is_regular(entry) and not ("/" not in path and OLD_SCRIPT_FILE.fullmatch(path)):
                    found.append(f"work/{path}")
        except OSError:
            pass
        return sorted(found)


def _is_regular(entry: fdtree.Entry) -> bool:
    """A readable regular file itself, not a link, device, pipe or socket."""
    try:
        return stat.S_ISREG(entry.stat.st_mode) and os.access(entry.name, os.R_OK, dir_fd=entry.folder,
                                                              follow_symlinks=False)
    except OSError:
        return False
