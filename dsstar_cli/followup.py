"""Follow-up questions: `dsstar ask DIR "and for April?" -c` (or `--follow RUN`) continues an earlier
run on the same folder.

The follow-up is a full run of its own. What it carries of the run it follows is one bounded block,
quoted as data (quoting.py) and placed before the question in the shared context (so the planner and
the coder, and every other role, read it): the earlier question, its answer format, its plan, its
final script and its answer. A chain of follow-ups carries only the immediately previous run, plus
one line naming the questions before it: the context stays the same size however long the chain.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from dsstar_cli.errors import UsageError
from dsstar_cli.history import RUN_ID, find_run, result_of, run_folders
from dsstar_cli.quoting import quote
from dsstar_cli.roles import clip

LAST = ":last"  # `-c/--continue`: the newest finished run on the same folder.
QUESTION_CHARS, STEP_CHARS, MAX_STEPS, SCRIPT_CHARS, ANSWER_CHARS = 1_000, 400, 12, 6_000, 2_000
EARLIER_QUESTIONS, EARLIER_QUESTION_CHARS = 8, 160
MAX_CHAIN = 50  # Links followed back at most (a chain is never a loop: each run follows an older one).


@dataclass(frozen=True)
class FollowUp:
    run_id: str
    context: str  # The block the prompts carry (see the module docstring).
    question: str = ""
    answer: str | None = None

    def as_dict(self) -> dict:
        return {"run_id": self.run_id, "context": self.context, "question": self.question, "answer": self.answer}


def resolve(ref: str | None, data_dir: Path, run_dir_setting: str | None) -> FollowUp | None:
    """The run a follow-up continues (`ref`: LAST, or a run id, prefix or folder as `runs show` takes
    them), or None when the question is not a follow-up. UsageError when there is no such run, it is
    unfinished, or it was on another folder."""
    if ref is None:
        return None
    folder = _last_on(data_dir, run_dir_setting) if ref == LAST else find_run(ref, run_dir_setting)
    result = result_of(folder)
    if result is None:
        raise UsageError(f"run {folder.name} did not finish: only a finished run can be followed")
    if Path(result.get("data_dir") or "") != data_dir:
        raise UsageError(f"run {folder.name} was on {result.get('data_dir')}, not {data_dir}: a follow-up asks the "
                         "same folder")
    return FollowUp(folder.name, earlier_block(folder, result, run_dir_setting), result.get("question") or "",
                    result.get("answer"))


def _last_on(data_dir: Path, run_dir_setting: str | None) -> Path:
    for folder in run_folders(run_dir_setting):
        result = result_of(folder)
        if result is not None and Path(result.get("data_dir") or "") == data_dir:
            return folder
    raise UsageError(f"no finished run on {data_dir} to continue: ask a first question without -c")


def earlier_block(folder: Path, result: dict, run_dir_setting: str | None) -> str:
    """The earlier run as the follow-up's prompts carry it, bounded (see the sizes above)."""
    steps = [clip(step, STEP_CHARS) for step in (result.get("plan") or [])[-MAX_STEPS:]]
    answer = result.get("answer")
    shown_answer = clip(answer, ANSWER_CHARS) if answer is not None else f"(none: {clip(result.get('reason', ''), 300)})"
    body = "\n".join([
        f"Question: {clip(result.get('question') or '', QUESTION_CHARS)}",
        f"Answer format: {clip(result.get('guidelines') or '(none given)', QUESTION_CHARS)}",
        "Plan:", *(f"{i}. {step}" for i, step in enumerate(steps, 1)),
        "Script:", clip(_script_of(folder, result), SCRIPT_CHARS),
        f"Answer: {shown_answer}"])
    parts = ["# Earlier question on this folder (the question below follows it and may refer to it)"]
    before = [clip(" ".join(q.split()), EARLIER_QUESTION_CHARS) for q in _earlier_questions(result, run_dir_setting)]
    if before:
        parts.append("Asked before it, oldest first: " + "; ".join(f'"{q}"' for q in before))
    parts.append(quote(body, f"the earlier run {folder.name} (its question, plan, script and answer)"))
    return "\n".join(parts)


def _script_of(folder: Path, result: dict) -> str:
    """The final script; when the answer was copied from the output, the verified script it came from."""
    if (result.get("final_code") or "").strip():
        return result["final_code"]
    try:
        plan = json.loads((folder / "state.json").read_text(encoding="utf-8"))["loop"]["plan"]
        return plan[-1]["code"] or "(none)"
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return "(not kept)"


def _earlier_questions(result: dict, run_dir_setting: str | None) -> list[str]:
    """The questions of the runs before the followed one, oldest first (the last EARLIER_QUESTIONS)."""
    return [link["question"] or "" for link in chain(result, run_dir_setting)][-EARLIER_QUESTIONS:]


def chain(result: dict, run_dir_setting: str | None) -> list[dict]:
    """The runs a result follows, oldest first: {id, question, answer, run_dir} each; a link whose run
    is gone ends the chain there."""
    links: list[dict] = []
    ref = result.get("follows")
    while ref and RUN_ID.fullmatch(ref) and len(links) < MAX_CHAIN:
        try:
            folder = find_run(ref, run_dir_setting)
        except UsageError:
            break
        earlier = result_of(folder) or {}
        links.append({"id": folder.name, "question": earlier.get("question"), "answer": earlier.get("answer"),
                      "run_dir": str(folder)})
        ref = earlier.get("follows")
    return links[::-1]
