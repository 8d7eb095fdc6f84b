"""Finalizer: the answer to exactly what was asked, in the form the question asks for. Its reply is
either the answer itself, copied from the output shown when that output already holds it (no data
is read again), or a last script that computes and prints only the answer."""

from __future__ import annotations

from dataclasses import dataclass

from dsstar_cli.model import Messages
from dsstar_cli.roles import numbered, render
from dsstar_cli.roles.context import RunContext
from dsstar_cli.roles.parsing import extract_code, fenced_blocks

ROLE = "finalizer"
ANSWER_LANG = "answer"


@dataclass(frozen=True)
class FinalReply:
    """`script` to run, or `answer` to use as it is (exactly one is set)."""

    script: str | None = None
    answer: str | None = None


def parse(reply: str) -> FinalReply | None:
    """A Python script wins over an answer block (when in doubt, compute); an ```answer block with
    text in it is the answer; anything else (no block, an empty one) is unreadable: re-asked once."""
    code = extract_code(reply)
    if code is not None:
        return FinalReply(script=code)
    answers = [text for text in fenced_blocks(reply, ANSWER_LANG) if text]
    if len(answers) != 1:  # None, or several: which one would be the answer?
        return None
    return FinalReply(answer=answers[0])


def messages(context: RunContext, plan: list[str], code: str, output: str, verifier_reason: str = "") -> Messages:
    """The plan too: when the output prints several candidate values, it says which one was meant; and
    the verifier's last reason, which says what it found the output to hold (or to lack)."""
    return render(ROLE, "finalize", context.for_script(code), plan=numbered(plan), code=code.rstrip(), output=output,
                  verifier_reason=verifier_reason or "(none given)")
