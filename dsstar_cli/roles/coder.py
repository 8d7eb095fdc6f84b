"""Coder: the whole plan as one script, extending the script that implemented the earlier steps."""

from dsstar_cli.model import Messages
from dsstar_cli.roles import code_block, numbered, render
from dsstar_cli.roles.parsing import extract_code

ROLE = "coder"
parse = extract_code


def messages(question: str, files: str, data_dir: str, plan: list[str], base_code: str | None) -> Messages:
    base = ""
    if base_code:
        done = len(plan) - 1
        base = (f"# Base code\nThis script already implements steps 1-{done} of the plan. Extend it to "
                f"implement step {len(plan)} too, keeping what works:\n{code_block(base_code)}\n")
    return render(ROLE, "write", question=question, files=files, data_dir=data_dir, plan=numbered(plan),
                  base_code_section=base)
