"""Verifier: an LLM judge of whether the plan and its output answer the question, and why not."""

from dsstar_cli.model import Messages
from dsstar_cli.roles import numbered, render
from dsstar_cli.roles.context import RunContext
from dsstar_cli.roles.parsing import FENCE, fenced_blocks, parse_verdict, verdict_reason

ROLE = "verifier"


def parse(reply: str) -> tuple[bool, str] | None:
    """(sufficient, the verifier's reason) or None when the reply says neither yes nor no."""
    verdict = parse_verdict(reply)
    return None if verdict is None else (verdict, verdict_reason(reply))


def messages(context: RunContext, plan: list[str], code: str, output: str) -> Messages:
    """The descriptions of the files the script reads come with the shared context: a plan's reading of a
    column is checked against that column's profile."""
    return render(ROLE, "verify", context.for_script(code), plan=numbered(plan), code=code.rstrip(), output=output)


ANSWER_LANG = "answer"
COPY_ANSWER = (" When Yes, add the answer itself in an ```answer block: copied from the output, exactly what was "
               "asked, in the requested answer format.")


def recheck_messages(context: RunContext, plan: list[str], code: str, output: str, answer: str | None) -> Messages:
    """A remembered verified script, run again on changed files (memory/replay.py). `answer`: what its
    final script printed, judged with it; None when the answer was copied from the output, and then the
    verifier copies it (an ```answer block), so no finalizer call is needed."""
    section = f"\n# The answer its final script printed, on the current files\n{answer}\n" if answer is not None else ""
    return render(ROLE, "recheck", context.for_script(code), plan=numbered(plan), code=code.rstrip(), output=output,
                  answer_section=section, answer_task="" if answer is not None else COPY_ANSWER)


def parse_recheck(reply: str) -> tuple[bool, str, str | None] | None:
    """(sufficient, why, the answer from an ```answer block or None), or None without a Yes or No."""
    verdict = parse(FENCE.sub("", reply))  # The answer block's text is no part of the verdict or its why.
    if verdict is None:
        return None
    answers = [text for text in fenced_blocks(reply, ANSWER_LANG) if text]
    return verdict[0], verdict[1], answers[0] if len(answers) == 1 else None
