"""Router: "Add Step" keeps the plan; "Step k" drops step k and everything after it."""

from dsstar_cli.model import Messages
from dsstar_cli.roles import numbered, render
from dsstar_cli.roles.context import RunContext
from dsstar_cli.roles.parsing import parse_route, route_why

ROLE = "router"


def parser(plan_length: int):
    """(action, k, why): the decision (see parse_route) and the router's one sentence why."""
    def parse(reply: str):
        decision = parse_route(reply, plan_length)
        return None if decision is None else (*decision, route_why(reply))
    return parse


def messages(context: RunContext, plan: list[str], output: str, reason: str) -> Messages:
    return render(ROLE, "route", context.full, plan=numbered(plan), output=output, steps=str(len(plan)),
                  reason=reason or "(no reason given)")
