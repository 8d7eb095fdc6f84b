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

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from dsstar_cli.analyzer.terms import terms
from dsstar_cli.memory import fingerprint
from dsstar_cli.memory.functions import MODULE, Function, harvest, module_source
from dsstar_cli.memory.store import CONVENTION, FUNCTION, Entry, Learned, Store
from dsstar_cli.quoting import quote

LIBRARY_DIR = ".dsstar-memory"  # In the run's work folder; sandbox/worker.py puts it on the scripts' sys.path.
MAX_FUNCTIONS, MAX_CONVENTIONS, MAX_ANSWERS, MAX_RECHECKS = 60, 40, 40, 2  # kept within reach
MAX_RUNS = 4          # earlier runs a prompt names (the most relevant: see `relevant`)
SHORT_DEFAULT = 24    # a longer default value is shown as ...
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

    def block(self, question: str) -> str:
        """The prompts' block for `question` (see `block`)."""
        return block(relevant(self, question))

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
    taken: dict = {}  # Each file hashed once, however many items read it.

    def unchanged(files: list[fingerprint.Fingerprint]) -> bool:
        return not fingerprint.changed(data_dir, files, taken)

    found = Offer()
    learned = store.learned(folder)
    functions = [f for f in learned if f.kind == FUNCTION]
    stale_runs = list(dict.fromkeys(f.run_id for f in functions if not unchanged(f.files)))
    for run_id in stale_runs[:MAX_RECHECKS]:
        script = next(f.script for f in functions if f.run_id == run_id)
        names = [f.key for f in functions if f.run_id == run_id]
        if recheck(script):
            now = [taken[f.path] for f in _files_of(functions, run_id)]  # Taken when found stale.
            store.vouch(folder, run_id, [f for f in now if f is not None])
            found.rechecked.append(run_id)
        else:
            store.forget_run(folder, run_id)
            found.forgotten += names
    if stale_runs[:MAX_RECHECKS]:  # Their files, or the functions themselves, changed in the store.
        functions = store.learned(folder, FUNCTION)
    waiting = set(stale_runs[MAX_RECHECKS:])
    found.functions = [f for f in functions if f.run_id not in waiting][-MAX_FUNCTIONS:]
    found.functions = [f for f in found.functions if _calls_offered(f, found.functions)]
    found.conventions = [c for c in learned if c.kind == CONVENTION and unchanged(c.files)][-MAX_CONVENTIONS:]
    found.answers = [a for a in answers if unchanged(a.files)][-MAX_ANSWERS:]
    return found


def block(groups: list[tuple[str, dict]]) -> str:
    """The prompts' block: the earlier runs `relevant` chose, each with its question, answer,
    functions and conventions; quoted as data. "" when none was chosen."""
    if not groups:
        return ""
    lines = []
    for run_id, group in groups:
        lines.append(f"Run {run_id} asked {_line(group['question'], QUESTION_CHARS)!r}"
                     + (f" => {_line(group['answer'], LINE_CHARS)}" if group.get("answer") is not None else ""))
        lines += [f"- function {_signature(f.body)}: {_line(f.body['doc'], LINE_CHARS)}" for f in group["functions"]]
        lines += [f"- convention: {_line(c.body['text'], LINE_CHARS)}" for c in group["conventions"]]
    intro = ("Earlier verified runs on this folder whose questions are closest to this one, and what they left "
             "(the files they read are unchanged, or their functions were re-checked on them). A script can "
             f"import their functions (`from {MODULE} import NAME`) instead of writing them again; a convention "
             "is the reading that run took. Use them where they fit; the question and the documents decide "
             "where they do not.")
    return f"{HEADING}\n{intro}\n" + quote("\n".join(lines), "dsstar's memory of this folder")


def relevant(offer: Offer, question: str, most: int = MAX_RUNS) -> list[tuple[str, dict]]:
    """The runs whose question, answer, function docstrings and conventions share the most terms with
    `question` (each shared term weighted by how few runs have it: "reports" in every question counts
    little), at most `most`, best first; a run sharing none is left out. Every offered function stays
    importable; only what the prompt names is chosen here, to keep it short."""
    groups: dict[str, dict] = {}
    for item in offer.functions + offer.conventions:
        group = groups.setdefault(item.run_id, {"question": item.question, "functions": [], "conventions": []})
        group["functions" if item.kind == FUNCTION else "conventions"].append(item)
    for entry in offer.answers:
        group = groups.setdefault(entry.run_id, {"question": entry.question, "functions": [], "conventions": []})
        group["answer"] = entry.answer
    words = {run_id: set(terms(" ".join([g["question"], str(g.get("answer") or "")]
                                        + [f"{f.key} {f.body['doc']}" for f in g["functions"]]
                                        + [c.body["text"] for c in g["conventions"]])))
             for run_id, g in groups.items()}
    asked = set(terms(question))
    spread = {term: sum(term in found for found in words.values()) for term in asked}
    scores = {run_id: sum(1 / spread[t] for t in found & asked) for run_id, found in words.items()}
    chosen = sorted((run_id for run_id in groups if scores[run_id] > 0), key=lambda r: -scores[r])[:most]
    return [(run_id, groups[run_id]) for run_id in chosen]


def _signature(body: dict) -> str:
    """`name(args)` with long defaults (a path written in) shown as `...`."""
    try:
        args = ast.parse(f"def {body['signature']}: pass").body[0].args
    except SyntaxError:
        return _line(body["signature"], LINE_CHARS)

    def short(default: ast.expr | None) -> ast.expr | None:
        return default if default is None or len(ast.unparse(default)) <= SHORT_DEFAULT else ast.Constant(...)

    args.defaults = [short(d) for d in args.defaults]
    args.kw_defaults = [short(d) for d in args.kw_defaults]
    returns = body["signature"].rsplit(") -> ", 1)[1] if ") -> " in body["signature"] else None
    return _line(f"{body['name']}({ast.unparse(args)})" + (f" -> {returns}" if returns else ""), LINE_CHARS)


def _files_of(functions: list[Learned], run_id: str) -> list[fingerprint.Fingerprint]:
    return next(f.files for f in functions if f.run_id == run_id)


def _calls_offered(function: Learned, offered: list[Learned]) -> bool:
    names = {f.key for f in offered}
    return all(name in names for name in function.body.get("calls") or [])


def _line(text: str, max_chars: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= max_chars else text[:max_chars].rsplit(" ", 1)[0] + " [...]"


