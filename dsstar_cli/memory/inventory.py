"""`dsstar memory show DIR` and `dsstar memory clear DIR`: what the memory keeps for a folder, from
which runs, and which entries are stale because a file they read changed."""

from __future__ import annotations

from pathlib import Path

from dsstar_cli.memory import fingerprint
from dsstar_cli.memory.store import CONVENTION, DB_NAME, FUNCTION, Learned, Store, memory_dir


def show(data_dir: Path) -> dict:
    """{data_dir, memory, entries: [{question, guidelines, answer, run, at, files, stale, changed}],
    functions: [{name, signature, doc, run, at, question, files, stale, changed}],
    conventions: [{text, run, at, question, files, stale, changed}]}."""
    if not (memory_dir() / DB_NAME).exists():  # Nothing kept yet: nothing is created to say so.
        return {"data_dir": str(data_dir), "memory": str(memory_dir() / DB_NAME), "entries": [], "functions": [],
                "conventions": []}
    store = Store.for_folder(data_dir)
    try:
        folder = fingerprint.folder_identity(data_dir)
        entries, learned = store.entries(folder), store.learned(folder)
    finally:
        store.close()
    taken: dict = {}  # Each file hashed once, however many entries read it.
    shown = []
    for entry in entries:
        changed = fingerprint.changed(data_dir, entry.files, taken)
        shown.append({"question": entry.question, "guidelines": entry.guidelines, "answer": entry.answer,
                      "run": entry.run_id, "at": entry.at, "answer_from": entry.answer_from,
                      "files": [f.path for f in entry.files], "stale": bool(changed), "changed": changed})
    return {"data_dir": str(data_dir), "memory": str(memory_dir() / DB_NAME), "entries": shown,
            "functions": [{"name": item.key, "signature": item.body["signature"], "doc": item.body["doc"],
                           **_origin(data_dir, item, taken)} for item in learned if item.kind == FUNCTION],
            "conventions": [{"text": item.body["text"], **_origin(data_dir, item, taken)}
                            for item in learned if item.kind == CONVENTION]}


def _origin(data_dir: Path, item: Learned, taken: dict) -> dict:
    changed = fingerprint.changed(data_dir, item.files, taken)
    return {"run": item.run_id, "at": item.at, "question": item.question, "files": [f.path for f in item.files],
            "stale": bool(changed), "changed": changed}


def clear(data_dir: Path) -> dict:
    """Forget every entry of the folder: {data_dir, memory, cleared}."""
    if not (memory_dir() / DB_NAME).exists():
        return {"data_dir": str(data_dir), "memory": str(memory_dir() / DB_NAME), "cleared": 0}
    store = Store.for_folder(data_dir)
    try:
        cleared = store.clear(fingerprint.folder_identity(data_dir))
    finally:
        store.close()
    return {"data_dir": str(data_dir), "memory": str(memory_dir() / DB_NAME), "cleared": cleared}


def text(shown: dict) -> str:
    """`memory show` for a person: one block per answer, function and convention."""
    entries, functions, conventions = shown["entries"], shown.get("functions", []), shown.get("conventions", [])
    if not (entries or functions or conventions):
        return f"nothing remembered for {shown['data_dir']}\n"
    stale = sum(e["stale"] for e in entries + functions + conventions)
    lines = [f"remembered for {shown['data_dir']}: {len(entries)} answer(s), {len(functions)} function(s), "
             f"{len(conventions)} convention(s) ({stale} stale), in {shown['memory']}"]
    for e in entries:
        form = f" [{e['guidelines']}]" if e["guidelines"] else ""
        lines += ["", f"{e['question']}{form}", f"  answer: {e['answer']}",
                  f"  from run {e['run']} at {e['at']}; read {', '.join(e['files']) or 'no file'}; {_state(e)}"]
    if functions:
        lines += ["", "functions (scripts import them: from remembered import NAME):"]
        for f in functions:
            lines += [f"  {f['signature']}", f"    {f['doc']}", f"    from run {f['run']} at {f['at']}; {_state(f)}"]
    if conventions:
        lines += ["", "conventions:"]
        for c in conventions:
            lines += [f"  {c['text']}", f"    from run {c['run']} at {c['at']}; {_state(c)}"]
    return "\n".join(lines) + "\n"


def _state(item: dict) -> str:
    return f"STALE: changed {', '.join(item['changed'])}" if item["stale"] else "current"
