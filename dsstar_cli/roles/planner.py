"""Planner: the first step, then one next step at a time given what the script printed."""

from dsstar_cli.model import Messages
from dsstar_cli.roles import numbered, render
from dsstar_cli.roles.parsing import parse_step

ROLE = "planner"
parse = parse_step


def first_step_messages(question: str, files: str, data_dir: str) -> Messages:
    return render(ROLE, "first", question=question, files=files, data_dir=data_dir)


def next_step_messages(question: str, files: str, data_dir: str, plan: list[str], output: str,
                       dropped: list[str]) -> Messages:
    fix_note = ""
    if dropped:
        fix_note = (" These later steps were judged wrong and dropped, so do not repeat their mistake: "
                    + "; ".join(f'"{step}"' for step in dropped) + ".")
    return render(ROLE, "next", question=question, files=files, data_dir=data_dir, plan=numbered(plan),
                  output=output, fix_note=fix_note)
