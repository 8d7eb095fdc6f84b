"""The answer from memory on an unchanged folder: a run of its own (its folder, journal and
result.json, so `dsstar runs` lists it), made with no model call, no sandbox and no analysis."""

from __future__ import annotations

import time
from pathlib import Path

from dsstar_cli.events import Event, Sink, fanout
from dsstar_cli.memory.store import Entry
from dsstar_cli.model import RoleUsage
from dsstar_cli.result import RunResult
from dsstar_cli.runlog import RunFolder
from dsstar_cli.secrets import redacting

NO_SANDBOX = {"level": "none", "note": "answered from memory: no script ran"}


def answer(entry: Entry, data_dir: Path, question: str, guidelines: str | None, run_folder: RunFolder,
           models: dict[str, str], max_rounds: int, emit: Sink, started: float) -> RunResult:
    """The remembered verified answer, said to come from `entry`'s run (which, and when)."""
    emit = fanout(run_folder, redacting(emit))
    emit(Event("run_started", {"question": question, "data_dir": str(data_dir), "run_dir": str(run_folder.path),
                               "max_rounds": max_rounds, "models": models, "resumed": False, "sandbox": NO_SANDBOX}))
    provenance = {"run": entry.run_id, "at": entry.at, "rechecked": False}
    emit(Event("from_memory", {**provenance, "answer": entry.answer}))
    kept = entry.result
    elapsed = round(time.monotonic() - started, 3)
    result = RunResult(
        question=question, answer=entry.answer, outcome="verified", verified=True,
        reason=f"answered from memory: verified by run {entry.run_id} at {entry.at}; the files it read are unchanged",
        rounds=0, max_rounds=max_rounds, plan=list(kept.get("plan") or []), history=[], final_code=entry.final_code,
        final_output=kept.get("final_output") or "", files=list(kept.get("files") or []),
        files_used=list(kept.get("files_used") or []), usage={"total": RoleUsage().as_dict()}, models=models,
        elapsed_s={"analysis": 0.0, "loop": elapsed, "total": elapsed}, run_dir=str(run_folder.path),
        data_dir=str(data_dir), guidelines=guidelines, sandbox=NO_SANDBOX, answer_from=entry.answer_from,
        note=kept.get("note"), assumptions=list(kept.get("assumptions") or []), table=kept.get("table"),
        from_memory=provenance)
    run_folder.write("result.json", result.to_json())
    emit(Event("answer", {"answer": result.answer, "outcome": result.outcome, "verified": True, "rounds": 0,
                          "reason": result.reason, "answer_from": result.answer_from, "note": result.note,
                          "assumptions": result.assumptions, "alternatives": []}))
    return result
