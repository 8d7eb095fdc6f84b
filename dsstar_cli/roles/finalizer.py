"""Finalizer: the answer to exactly what was asked, in the form the question asks for. Its reply is
either the answer itself, copied from the output shown when that output already holds it (no data
is read again), or a last script that computes and prints only the answer; or, when the verified
output shows that the folder cannot answer the question, a block saying why.

Beside either, optional blocks: ```note (what the answer refers to: the year, the unit, the period;
shown beside the answer, never inside it) and ```reading (the plan's assumptions and the
alternative readings the scripts printed answers for; see readings.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dsstar_cli import readings
from dsstar_cli.model import Messages
from dsstar_cli.roles import numbered, render
from dsstar_cli.roles.context import RunContext
from dsstar_cli.roles.parsing import FENCE, extract_code, fenced_blocks

ROLE = "finalizer"
ANSWER_LANG, UNANSWERABLE_LANG, NOTE_LANG, READING_LANG = "answer", "unanswerable", "note", "reading"
MAX_NOTE = 300


@dataclass(frozen=True)
class FinalReply:
    """`script` to run, `answer` to use as it is, or `unanswerable` (why the data cannot answer):
    exactly one is set. `note` and `reading` go with any of them."""

    script: str | None = None
    answer: str | None = None
    unanswerable: str | None = None
    note: str | None = None
    reading: readings.Reading = field(default_factory=readings.Reading)


def parse(reply: str) -> FinalReply | None:
    """A Python script wins over an answer block (when in doubt, compute); an ```answer block with
    text in it is the answer; an ```unanswerable block says the data cannot answer; anything else
    (no block, an empty one, several answers) is unreadable: re-asked once."""
    extras = {"note": _note(reply), "reading": readings.parse("\n".join(fenced_blocks(reply, READING_LANG)))}
    code = extract_code(_without_extras(reply))
    if code is not None:
        return FinalReply(script=code, **extras)
    answers = [text for text in fenced_blocks(reply, ANSWER_LANG) if text]
    if len(answers) == 1:
        return FinalReply(answer=answers[0], **extras)
    why = [text for text in fenced_blocks(reply, UNANSWERABLE_LANG) if text]
    if not answers and why:
        return FinalReply(unanswerable=" ".join(why[0].split()), **extras)
    return None  # None, or several answers: which one would be the answer?


def messages(context: RunContext, plan: list[str], code: str, output: str, verifier_reason: str = "") -> Messages:
    """The plan too: when the output prints several candidate values, it says which one was meant; and
    the verifier's last reason, which says what it found the output to hold (or to lack)."""
    return render(ROLE, "finalize", context.for_script(code), plan=numbered(plan), code=code.rstrip(), output=output,
                  verifier_reason=verifier_reason or "(none given)")


def _note(reply: str) -> str | None:
    notes = [" ".join(text.split()) for text in fenced_blocks(reply, NOTE_LANG) if text.strip()]
    return notes[0][:MAX_NOTE] if notes else None


def _without_extras(reply: str) -> str:
    """The reply without its note, reading and answer blocks, so that none is taken for a script."""
    skipped = {ANSWER_LANG, UNANSWERABLE_LANG, NOTE_LANG, READING_LANG}
    return FENCE.sub(lambda m: "" if m.group(1).lower() in skipped else m.group(0), reply)
