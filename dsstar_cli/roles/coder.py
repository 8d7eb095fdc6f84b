"""Coder: the whole plan as one script, extending the script that implemented the earlier steps; or,
for a question the folder's memory covers (memory/shortcut.py), the one-step plan and its script at
once, the plan as the script's first comment."""

import re

from dsstar_cli.model import Messages
from dsstar_cli.roles import code_block, libraries, numbered, render
from dsstar_cli.roles.context import RunContext
from dsstar_cli.roles.parsing import extract_code

ROLE = "coder"
parse = extract_code


def messages(context: RunContext, plan: list[str], base_code: str | None, output_chars: int,
             printed_chars: int = 0, cut_chars: int = 0) -> Messages:
    """`printed_chars`: how much the last script printed; `cut_chars`: how much of it reviewers
    were not shown (keep_evidence), when any."""
    base = ""
    if base_code:
        done = len(plan) - 1
        base = (f"# Base code\nThis script already implements steps 1-{done} of the plan. Extend it to "
                f"implement step {len(plan)} too, keeping what works:\n{code_block(base_code)}\n")
    cut_note = ""
    if cut_chars:
        cut_note = (f"\nNote: the last script printed {printed_chars:,} characters, more than the {output_chars:,} "
                    f"reviewers are shown: {cut_chars:,} were cut (only labelled lines and the end were kept). "
                    "Print less: compact labelled results.\n")
    return render(ROLE, "write", context.full, plan=numbered(plan), base_code_section=base, cut_note=cut_note,
                  output_chars=f"{output_chars:,}", libraries=libraries())


PLAN_LINE = re.compile(r"^\s*#\s*Plan:\s*(\S.*?)\s*$", re.MULTILINE)


def shortcut_messages(context: RunContext, output_chars: int) -> Messages:
    """One script for the whole question, written with the remembered functions its context lists."""
    return render(ROLE, "shortcut", context.full, output_chars=f"{output_chars:,}", libraries=libraries())


def plan_of(code: str) -> str | None:
    """The plan a shortcut script states in its `# Plan:` comment, or None."""
    found = PLAN_LINE.search(code)
    return found.group(1) if found else None
