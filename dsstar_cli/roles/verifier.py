"""Verifier: an LLM judge of whether the plan and its output answer the question, and why not.

The charts the script saved and named in its output (`FIGURE: path`) go with the verdict's request
as images: the model layer sends them to a model that accepts images (litellm says which) and
drops them for any other, so an empty, unlabelled or wrong chart is sent back like a wrong number."""

import base64
import os
import re

from dsstar_cli.inline_image import png_for_terminal
from dsstar_cli.model import Messages
from dsstar_cli.roles import numbered, render
from dsstar_cli.roles.context import RunContext
from dsstar_cli.roles.parsing import FENCE, fenced_blocks, parse_verdict, verdict_reason

ROLE = "verifier"


def parse(reply: str) -> tuple[bool, str] | None:
    """(sufficient, the verifier's reason) or None when the reply says neither yes nor no."""
    verdict = parse_verdict(reply)
    return None if verdict is None else (verdict, verdict_reason(reply))


MAX_FIGURES = 3
FIGURE_LINE = re.compile(r"^FIGURE:\s*(\S.*?)\s*$", re.MULTILINE)
FIGURES_NOTE = ("\n\nThe figures the script saved ({names}) are attached when you can see images: when the "
                "question asks for a chart, judge them too (the right series and period, a title and labelled "
                "axes, not empty).")


def messages(context: RunContext, plan: list[str], code: str, output: str,
             figures: list[tuple[str, str]] | None = None) -> Messages:
    """The descriptions of the files the script reads come with the shared context: a plan's reading of a
    column is checked against that column's profile. `figures`: (name, PNG data URI) of the charts the
    script saved (see `figures_in`), as the last message's `images`."""
    found = render(ROLE, "verify", context.for_script(code), plan=numbered(plan), code=code.rstrip(), output=output)
    if figures:
        names = ", ".join(name for name, _ in figures)
        found[-1] = {**found[-1], "content": found[-1]["content"] + FIGURES_NOTE.format(names=names),
                     "images": [uri for _, uri in figures]}
    return found


def figures_in(output: str, workdir: str) -> list[tuple[str, str]]:
    """(path as printed, PNG data URI) of the first figures the output names with `FIGURE: path`, each
    inside the work folder once links are resolved (a script naming a file of the user's gets nothing
    sent), read as the terminal reads them (bounded, re-encoded by pillow)."""
    found, root = [], os.path.realpath(workdir)
    for name in dict.fromkeys(FIGURE_LINE.findall(output)):
        path = os.path.realpath(os.path.join(root, name))
        if not path.startswith(root + os.sep):
            continue
        png = png_for_terminal(path)
        if png is not None:
            found.append((name, "data:image/png;base64," + base64.b64encode(png).decode("ascii")))
        if len(found) == MAX_FIGURES:
            break
    return found


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


def answer_messages(context: RunContext, plan: list[str], code: str, output: str,
                    figures: list[tuple[str, str]] | None = None) -> Messages:
    """`messages`, and when Yes the answer copied from the output (an ```answer block): a question the
    memory covers (memory/shortcut.py) then needs no finalizer call. Parsed by `parse_recheck`."""
    found = messages(context, plan, code, output, figures)
    found[-1] = {**found[-1], "content": found[-1]["content"] + COPY_ANSWER}
    return found


def parse_recheck(reply: str) -> tuple[bool, str, str | None] | None:
    """(sufficient, why, the answer from an ```answer block or None), or None without a Yes or No."""
    verdict = parse(FENCE.sub("", reply))  # The answer block's text is no part of the verdict or its why.
    if verdict is None:
        return None
    answers = [text for text in fenced_blocks(reply, ANSWER_LANG) if text]
    return verdict[0], verdict[1], answers[0] if len(answers) == 1 else None
