"""What a folder's verified runs established, offered to its later runs: the reusable functions of
their verified scripts, the conventions they settled, and the answers they verified.

    a run verified  -> its script's functions that stand on their own (functions.py) are kept, and,
                       when it took one reading only and follows no other run, its assumptions (the
                       conventions it settled: "an empty list applies to all values, as null does")
    a later run     -> its prompts carry one block naming them (with the run and question each came
                       from); its scripts can `from remembered import NAME`: a module written into
                       the run's work folder (LIBRARY_DIR, which the sandbox worker puts on sys.path)

Everything offered rests on the fingerprints of the files its run read (fingerprint.py):
- a convention or an answer whose files changed is not offered (`memory show` marks it stale);
- a function whose files changed is re-checked first: its verified script runs again in the sandbox
  on the current files (no model call). Runs well: it is offered and rests on the files as they are
  now. Fails: it is forgotten, as it no longer works on this folder (a later verified run keeps new
  ones). At most MAX_RECHECKS scripts are re-run a run; the rest wait, unoffered.

Remembered code runs only as scripts do: in the sandbox, imported by a script. The module holds this
folder's functions only; the database itself is never within a script's reach.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from dsstar_cli.memory import fingerprint
from dsstar_cli.memory.functions import Function, harvest, module_source
from dsstar_cli.memory.store import CONVENTION, FUNCTION, Entry, Learned, Store
from dsstar_cli.quoting import quote

LIBRARY_DIR = ".dsstar-memory"  # In the run's work folder; sandbox/worker.py puts it on the scripts' sys.path.
MODULE = "remembered"
MAX_FUNCTIONS, MAX_CONVENTIONS, MAX_ANSWERS, MAX_RECHECKS = 30, 20, 10, 2
LINE_CHARS, QUESTION_CHARS = 300, 120
HEADING = "# This folder's memory"


def learn(store: Store, folder: str, solution_code: str, assumptions: list[str], one_reading: bool,
          source: Learned) -> None:
    """Keep what the verified run `source` (its run, time, question and files) established: the functions
    of `solution_code`, and `assumptions` when it took `one_reading`."""
    items = [Learned(FUNCTION, f.name, f.as_dict(), source.run_id, source.at, source.question, solution_code,
                     source.files) for f in harvest(solution_code)]
    if one_reading:
        items += [Learned(CONVENTION, " ".join(text.split()).casefold(), {"text": text}, source.run_id, source.at,
                          source.question, "", source.files) for text in assumptions if text.strip()]
    store.learn(folder, items)


@dataclass
class Offer:
    """What a run is offered (see the module docstring), and what its re-check did."""
    functions: list[Learned] = field(default_factory=list)
    conventions: list[Learned] = field(default_factory=list)
    answers: list[Entry] = field(default_factory=list)
    rechecked: list[str] = field(default_factory=list)   # runs whose functions were re-checked, and held
    forgotten: list[str] = field(default_factory=list)   # functions forgotten: their script failed

    def __bool__(self) -> bool:
        return bool(self.functions or self.conventions or self.answers)

    def summary(self) -> dict:
        return {"functions": [f.key for f in self.functions], "conventions": len(self.conventions),
                "answers": len(self.answers), "rechecked": self.rechecked, "forgotten": self.forgotten}

    def block(self) -> str:
        """The prompts' block: what is offered, each item with the run it came from; quoted as data."""
        if not self:
            return ""
        parts = []
        if self.functions:
            parts.append(f"Functions a script can import (`from {MODULE} import NAME`), each from a verified script "
                         "on this folder; the files they read are unchanged since, or they were re-checked on them:\n"
                         + "\n".join(f"- {_line(f.body['signature'], LINE_CHARS)}: {_line(f.body['doc'], LINE_CHARS)} "
                                     f"[{_origin(f.run_id, f.question)}]" for f in self.functions))
        if self.conventions:
            parts.append("Conventions verified runs on this folder settled (readings of the data or the documents "
                         "they took; the files they read are unchanged):\n"
                         + "\n".join(f"- {_line(c.body['text'], LINE_CHARS)} [{_origin(c.run_id, c.question)}]"
                                     for c in self.conventions))
        if self.answers:
            parts.append("Questions verified runs on this folder answered (the files they read are unchanged):\n"
                         + "\n".join(f"- {_line(a.question, QUESTION_CHARS)!r}"
                                     + (f" [{_line(a.guidelines, QUESTION_CHARS)}]" if a.guidelines else "")
                                     + f" => {_line(a.answer, LINE_CHARS)} [run {a.run_id}]" for a in self.answers))
        intro = ("Earlier runs on this folder were verified; this is what they left. Use it where it fits the "
                 "question (an imported function instead of writing it again); the question and the documents "
                 "decide where it does not.")
        return f"{HEADING}\n{intro}\n" + quote("\n\n".join(parts), "dsstar's memory of this folder")

    def install(self, workdir: Path) -> None:
        """Write the module scripts import the functions from (nothing when none is offered)."""
        if not self.functions:
            return
        library = workdir / LIBRARY_DIR
        library.mkdir(mode=0o755, exist_ok=True)
        functions = [Function(**f.body) for f in self.functions]
        text = module_source(functions, "Functions of verified scripts on this folder, kept by dsstar's memory.")
        fd = os.open(library / f"{MODULE}.py", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)


def offer(store: Store, folder: str, data_dir: Path, answers: list[Entry],
          recheck: Callable[[str], bool]) -> Offer:
    """What the folder's memory offers a run now. `recheck(script)` runs a script in the sandbox and
    says whether it ran well; `answers` are the folder's remembered answers."""
    current = {}

    def unchanged(files: list[fingerprint.Fingerprint]) -> bool:
        for old in files:
            if old.path not in current:
                current[old.path] = fingerprint.take(data_dir, old.path)
            if not fingerprint.unchanged(old, current[old.path]):
                return False
        return True

    found = Offer()
    learned = store.learned(folder)
    functions = [f for f in learned if f.kind == FUNCTION]
    stale_runs = list(dict.fromkeys(f.run_id for f in functions if not unchanged(f.files)))
    for run_id in stale_runs[:MAX_RECHECKS]:
        script = next(f.script for f in functions if f.run_id == run_id)
        names = [f.key for f in functions if f.run_id == run_id]
        if recheck(script):
            now = [fingerprint.take(data_dir, f.path) for f in _files_of(functions, run_id)]
            store.vouch(folder, run_id, [f for f in now if f is not None])
            found.rechecked.append(run_id)
        else:
            store.forget_run(folder, run_id)
            found.forgotten += names
    waiting = set(stale_runs[MAX_RECHECKS:])
    found.functions = [f for f in store.learned(folder, FUNCTION) if f.run_id not in waiting][-MAX_FUNCTIONS:]
    found.functions = [f for f in found.functions if _calls_offered(f, found.functions)]
    found.conventions = [c for c in learned if c.kind == CONVENTION and unchanged(c.files)][-MAX_CONVENTIONS:]
    found.answers = [a for a in answers if unchanged(a.files)][-MAX_ANSWERS:]
    return found


def _files_of(functions: list[Learned], run_id: str) -> list[fingerprint.Fingerprint]:
    return next(f.files for f in functions if f.run_id == run_id)


def _calls_offered(function: Learned, offered: list[Learned]) -> bool:
    names = {f.key for f in offered}
    return all(name in names for name in function.body.get("calls") or [])


def _line(text: str, max_chars: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= max_chars else text[:max_chars].rsplit(" ", 1)[0] + " [...]"


def _origin(run_id: str, question: str) -> str:
    return f"run {run_id}: {_line(question, QUESTION_CHARS)!r}"
