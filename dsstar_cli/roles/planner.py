"""Planner: the first step, then one next step at a time given what the script printed."""

from dsstar_cli.model import Messages
from dsstar_cli.roles import numbered, render
from dsstar_cli.roles.context import RunContext
from dsstar_cli.roles.parsing import parse_step

ROLE = "planner"
parse = parse_step


def first_step_messages(context: RunContext) -> Messages:
    return render(ROLE, "first", context.full)


def next_step_messages(context: RunContext, plan: list[str], output: str, dropped: list[str],
                       reason: str = "", route_why: str = "") -> Messages:
    fix_note = ""
    if dropped:
        fix_note = (" These later steps were judged wrong and dropped, so do not repeat their mistake: "
                    + "; ".join(f'"{step}"' for step in dropped) + ".")
    reason_section = f"\n# Why the verifier said No\n{reason}\n" if reason else ""
    if route_why:
        decision = "drop those steps" if dropped else "add a step"
        reason_section += f"\n# Why the router chose to {decision}\n{route_why}\n"
    # After a drop, the last script still ran the dropped steps: say so, or its output reads as the plan's.
    heading = ("Output of the last script (it also ran the dropped steps, so trust only what the plan above "
               "explains)" if dropped else "Output of that script")
    return render(ROLE, "next", context.full, plan=numbered(plan) if plan else "(no steps yet: all were dropped)",
                  output=output, fix_note=fix_note, reason_section=reason_section, output_heading=heading)
