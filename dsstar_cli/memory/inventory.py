"""`dsstar memory show DIR` and `dsstar memory clear DIR`: what the memory keeps for a folder, from
which runs, and which entries are stale because a file they read changed."""

from __future__ import annotations

from pathlib import Path

from dsstar_cli.memory import fingerprint
from dsstar_cli.memory.recall import changed_files
from dsstar_cli.memory.store import DB_NAME, Store, memory_dir


def show(data_dir: Path) -> dict:
    """{data_dir, memory, entries: [{question, guidelines, answer, run, at, files, stale, changed}]}."""
    if not (memory_dir() / DB_NAME).exists():  # Nothing kept yet: nothing is created to say so.
        return {"data_dir": str(data_dir), "memory": str(memory_dir() / DB_NAME), "entries": []}
    store = Store.for_folder(data_dir)
    try:
        entries = store.entries(fingerprint.folder_identity(data_dir))
    finally:
        store.close()
    shown = []
    for entry in entries:
        changed = changed_files(data_dir, entry)
        shown.append({"question": entry.question, "guidelines": entry.guidelines, "answer": entry.answer,
                      "run": entry.run_id, "at": entry.at, "answer_from": entry.answer_from,
                      "files": [f.path for f in entry.files], "stale": bool(changed), "changed": changed})
    return {"data_dir": str(data_dir), "memory": str(memory_dir() / DB_NAME), "entries": shown}


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
    """`memory show` for a person: one block per entry."""
    entries = shown["entries"]
    if not entries:
        return f"nothing remembered for {shown['data_dir']}\n"
    stale = sum(e["stale"] for e in entries)
    lines = [f"{len(entries)} answer(s) remembered for {shown['data_dir']} ({stale} stale), in {shown['memory']}"]
    for e in entries:
        state = f"STALE: changed {', '.join(e['changed'])}" if e["stale"] else "current"
        form = f" [{e['guidelines']}]" if e["guidelines"] else ""
        lines += ["", f"{e['question']}{form}", f"  answer: {e['answer']}",
                  f"  from run {e['run']} at {e['at']}; read {', '.join(e['files']) or 'no file'}; {state}"]
    return "\n".join(lines) + "\n"
