"""The memory's index: one SQLite database for all of a user's folders, kept as Simon Willison's
`llm` keeps its logs: a `schema_version` table and numbered migrations applied in order, WAL
journaling, and every write in one `BEGIN IMMEDIATE` transaction with a generous busy timeout, so
two dsstar processes writing at once both land (one waits for the other) and a reader never blocks.

It lives in `memory/` beside `runs/` in the user data folder (see `memory_dir`): a folder of mode
0700 that is never inside the data folder asked about, and holds no credentials (what is kept was
redacted first: see recall.py).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from dsstar_cli.memory.fingerprint import Fingerprint
from dsstar_cli.runlog import claim_private_dir, inside, user_data_dir

DB_NAME = "memory.db"
BUSY_TIMEOUT_S = 30.0

# Migration N takes the schema from version N to N+1. Append, never edit one already released.
MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE answers (
               id INTEGER PRIMARY KEY,
               folder TEXT NOT NULL,          -- fingerprint.folder_identity
               question_key TEXT NOT NULL,    -- the question, normalised (see recall.normalise)
               guidelines_key TEXT NOT NULL,  -- the answer format, normalised ('' when none)
               question TEXT NOT NULL,
               guidelines TEXT,
               run_id TEXT NOT NULL,          -- the run that verified it
               at TEXT NOT NULL,              -- when that run ended (ISO 8601, local time)
               answer TEXT NOT NULL,
               answer_from TEXT,              -- final_script | solution_output
               solution_code TEXT NOT NULL,   -- the verified script
               final_code TEXT NOT NULL,      -- the finalizer's script ('' when the answer was copied)
               result TEXT NOT NULL,          -- JSON: what an answer from memory repeats of the result
               UNIQUE (folder, question_key, guidelines_key))""",
        """CREATE TABLE answer_files (
               answer_id INTEGER NOT NULL REFERENCES answers(id) ON DELETE CASCADE,
               path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
               hash TEXT NOT NULL, sampled INTEGER NOT NULL,
               PRIMARY KEY (answer_id, path))""",
        "CREATE INDEX answers_by_folder ON answers(folder)",
    ],
    [
        """CREATE TABLE learned (
               id INTEGER PRIMARY KEY,
               folder TEXT NOT NULL,
               kind TEXT NOT NULL,            -- function | convention
               key TEXT NOT NULL,             -- the function's name; the convention's text, normalised
               body TEXT NOT NULL,            -- JSON: functions.Function, or {"text": ...} for a convention
               run_id TEXT NOT NULL,          -- the verified run it came from
               at TEXT NOT NULL,
               question TEXT NOT NULL,        -- that run's question
               script TEXT NOT NULL,          -- a function's verified script, re-run to re-check it ('' else)
               files TEXT NOT NULL,           -- JSON: fingerprints of the files that run read
               UNIQUE (folder, kind, key))""",
        "CREATE INDEX learned_by_folder ON learned(folder)",
    ],
]
SCHEMA_VERSION = len(MIGRATIONS)


class MemoryUnavailable(Exception):
    """The memory cannot be used here (its folder, or a database from a newer dsstar): runs go on
    without it; `dsstar memory` says why."""


@dataclass
class Entry:
    id: int
    folder: str
    question: str
    guidelines: str | None
    run_id: str
    at: str
    answer: str
    answer_from: str | None
    solution_code: str
    final_code: str
    result: dict
    files: list[Fingerprint] = field(default_factory=list)


@dataclass
class Learned:
    """A function or a convention a verified run left (knowledge.py), and where it came from."""
    kind: str                # FUNCTION | CONVENTION
    key: str
    body: dict
    run_id: str
    at: str
    question: str
    script: str = ""
    files: list[Fingerprint] = field(default_factory=list)


FUNCTION, CONVENTION = "function", "convention"


def memory_dir() -> Path:
    """$XDG_DATA_HOME/dsstar/memory (beside the run history's runs/)."""
    return user_data_dir() / "memory"


def _write_ahead_log(db: sqlite3.Connection) -> None:
    """WAL mode, waiting out another process that holds the lock: SQLite answers "database is locked"
    to a journal-mode change at once, without its busy handler (seen: two first runs at once)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class Store:
    def __init__(self, folder: Path):
        self.folder = folder
        _claim(folder)
        path = folder / DB_NAME
        try:
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
            self.db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            _write_ahead_log(self.db)
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except (OSError, sqlite3.Error) as exc:
            raise MemoryUnavailable(f"cannot open the memory {path}: {exc}") from exc

    @classmethod
    def for_folder(cls, data_dir: Path) -> "Store":
        """The store, refused when it would lie inside the data folder (which is never written)."""
        folder = memory_dir()
        if inside(folder, data_dir):
            raise MemoryUnavailable(f"the memory folder {folder} is inside the data folder {data_dir}")
        return cls(folder)

    def close(self) -> None:
        self.db.close()

    def _migrate(self) -> None:
        """Bring the schema up to SCHEMA_VERSION (under the write lock: two processes that both find it
        old migrate it once). A database already current costs one read, no lock."""
        if self._version() == SCHEMA_VERSION:
            return
        with self._write():
            self.db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = self.db.execute("SELECT version FROM schema_version").fetchone()
            version = row[0] if row else 0
            if version > SCHEMA_VERSION:
                raise MemoryUnavailable(f"the memory in {self.folder} was written by a newer dsstar (schema "
                                        f"{version}, this one knows {SCHEMA_VERSION})")
            for steps in MIGRATIONS[version:]:
                for statement in steps:
                    self.db.execute(statement)
            if row is None:
                self.db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            elif version < SCHEMA_VERSION:
                self.db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))

    def _version(self) -> int | None:
        try:
            row = self.db.execute("SELECT version FROM schema_version").fetchone()
        except sqlite3.OperationalError:  # No such table yet.
            return None
        return row[0] if row else None

    def _write(self):
        return _Transaction(self.db)

    # -- answers ---------------------------------------------------------------------------------

    def find(self, folder: str, question_key: str, guidelines_key: str) -> Entry | None:
        row = self.db.execute(f"SELECT {_COLUMNS} FROM answers WHERE folder = ? AND question_key = ? AND "
                              "guidelines_key = ?", (folder, question_key, guidelines_key)).fetchone()
        return self._entry(row) if row else None

    def entries(self, folder: str) -> list[Entry]:
        rows = self.db.execute(f"SELECT {_COLUMNS} FROM answers WHERE folder = ? ORDER BY at, id", (folder,))
        return [self._entry(row) for row in rows.fetchall()]

    def put(self, entry: Entry, question_key: str, guidelines_key: str) -> None:
        """Keep `entry`, replacing the one for the same question, answer format and folder."""
        with self._write():
            self.db.execute("DELETE FROM answers WHERE folder = ? AND question_key = ? AND guidelines_key = ?",
                            (entry.folder, question_key, guidelines_key))
            cursor = self.db.execute(
                "INSERT INTO answers (folder, question_key, guidelines_key, question, guidelines, run_id, at, answer, "
                "answer_from, solution_code, final_code, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (entry.folder, question_key, guidelines_key, entry.question, entry.guidelines, entry.run_id, entry.at,
                 entry.answer, entry.answer_from, entry.solution_code, entry.final_code, json.dumps(entry.result)))
            self.db.executemany("INSERT INTO answer_files VALUES (?, ?, ?, ?, ?, ?)",
                                [(cursor.lastrowid, f.path, f.size, f.mtime_ns, f.hash, int(f.sampled))
                                 for f in entry.files])

    def clear(self, folder: str) -> int:
        """Forget the folder's answers, functions and conventions; how many there were."""
        with self._write():
            learned = self.db.execute("DELETE FROM learned WHERE folder = ?", (folder,)).rowcount
            return self.db.execute("DELETE FROM answers WHERE folder = ?", (folder,)).rowcount + learned

    # -- functions and conventions ---------------------------------------------------------------

    def learned(self, folder: str, kind: str | None = None) -> list[Learned]:
        """The folder's functions and conventions (or those of `kind`), oldest first."""
        rows = self.db.execute("SELECT kind, key, body, run_id, at, question, script, files FROM learned WHERE "
                               "folder = ? AND kind = coalesce(?, kind) ORDER BY at, id", (folder, kind))
        return [Learned(kind, key, json.loads(body), run_id, at, question, script,
                        [Fingerprint(**f) for f in json.loads(files)])
                for kind, key, body, run_id, at, question, script, files in rows.fetchall()]

    def learn(self, folder: str, items: list[Learned]) -> None:
        """Keep `items`, each replacing the folder's item of the same kind and key. A kept function that
        calls one replaced here by another run's is dropped: it was verified beside the old one."""
        if not items:
            return
        with self._write():
            replaced = {i.key for i in items if i.kind == FUNCTION}
            runs = {i.run_id for i in items}
            for kind, key, body, run_id in self.db.execute(
                    "SELECT kind, key, body, run_id FROM learned WHERE folder = ? AND kind = ?",
                    (folder, FUNCTION)).fetchall():
                if run_id not in runs and replaced & set(json.loads(body).get("calls") or []):
                    self.db.execute("DELETE FROM learned WHERE folder = ? AND kind = ? AND key = ?", (folder, kind, key))
            self.db.executemany(
                "INSERT OR REPLACE INTO learned (folder, kind, key, body, run_id, at, question, script, files) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(folder, i.kind, i.key, json.dumps(i.body), i.run_id, i.at, i.question, i.script,
                  json.dumps([f.as_dict() for f in i.files])) for i in items])

    def vouch(self, folder: str, run_id: str, files: list[Fingerprint]) -> None:
        """The functions from `run_id` were re-checked on the files as they are now: they rest on these."""
        with self._write():
            self.db.execute("UPDATE learned SET files = ? WHERE folder = ? AND kind = ? AND run_id = ?",
                            (json.dumps([f.as_dict() for f in files]), folder, FUNCTION, run_id))

    def forget_run(self, folder: str, run_id: str) -> None:
        """Drop the functions from `run_id` (their script failed its re-check on the current files)."""
        with self._write():
            self.db.execute("DELETE FROM learned WHERE folder = ? AND kind = ? AND run_id = ?",
                            (folder, FUNCTION, run_id))

    def _entry(self, row: tuple) -> Entry:
        entry = Entry(*row[:10], result=json.loads(row[10]))
        files = self.db.execute("SELECT path, size, mtime_ns, hash, sampled FROM answer_files WHERE answer_id = ? "
                                "ORDER BY path", (entry.id,))
        entry.files = [Fingerprint(path, size, mtime, digest, bool(sampled))
                       for path, size, mtime, digest, sampled in files.fetchall()]
        return entry


_COLUMNS = ("id, folder, question, guidelines, run_id, at, answer, answer_from, solution_code, final_code, result")


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error): the write lock is taken at the start, so two
    writers queue on the busy timeout instead of failing midway on a lock upgrade."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind, value, tb) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")


def _claim(folder: Path) -> None:
    """Create the memory folder private to the user (0700); refuse a link or someone else's folder."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        claim_private_dir(folder)
    except OSError as exc:
        raise MemoryUnavailable(f"cannot use the memory folder {folder}: {exc.strerror or exc}") from exc
