"""Verifier: an LLM judge of whether the plan and its output answer the question, and why not."""

from dsstar_cli.model import Messages
from dsstar_cli.roles import numbered, render
from dsstar_cli.roles.context import RunContext
from dsstar_cli.roles.parsing import parse_verdict, verdict_reason

ROLE = "verifier"


def parse(reply: str) -> tuple[bool, str] | None:
    """(sufficient, the verifier's reason) or None when the reply says neither yes nor no."""
    verdict = parse_verdict(reply)
    return None if verdict is None else (verdict, verdict_reason(reply))


def messages(context: RunContext, plan: list[str], code: str, output: str) -> Messages:
    """The descriptions of the files the script reads come with the shared context: a plan's reading of a
    column is checked against that column's profile."""
    return render(ROLE, "verify", context.for_script(code), plan=numbered(plan), code=code.rstrip(), output=output)
