"""Router: "Add Step" keeps the plan; "Step k" drops step k and everything after it."""

from functools import partial

from dsstar_cli.model import Messages
from dsstar_cli.roles import numbered, render
from dsstar_cli.roles.parsing import parse_route

ROLE = "router"


def parser(plan_length: int):
    return partial(parse_route, plan_length=plan_length)


def messages(question: str, plan: list[str], output: str, files: str, data_dir: str) -> Messages:
    return render(ROLE, "route", question=question, plan=numbered(plan), output=output, files=files,
                  data_dir=data_dir, steps=str(len(plan)))
