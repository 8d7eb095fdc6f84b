"""Router: "Add Step" keeps the plan; "Step k" drops step k and everything after it."""

from functools import partial

from dsstar_cli.model import Messages
from dsstar_cli.roles import numbered, render
from dsstar_cli.roles.context import RunContext
from dsstar_cli.roles.parsing import parse_route

ROLE = "router"


def parser(plan_length: int):
    return partial(parse_route, plan_length=plan_length)


def messages(context: RunContext, plan: list[str], output: str, reason: str) -> Messages:
    return render(ROLE, "route", context.full, plan=numbered(plan), output=output, steps=str(len(plan)),
                  reason=reason or "(no reason given)")
