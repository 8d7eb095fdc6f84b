"""Verifier: an LLM judge of whether the plan and its output answer the question."""

from dsstar_cli.model import Messages
from dsstar_cli.roles import numbered, render
from dsstar_cli.roles.parsing import parse_verdict

ROLE = "verifier"
parse = parse_verdict


def messages(question: str, plan: list[str], code: str, output: str) -> Messages:
    return render(ROLE, "verify", question=question, plan=numbered(plan), code=code.rstrip(), output=output)
