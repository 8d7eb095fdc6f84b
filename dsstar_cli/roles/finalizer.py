"""Finalizer: a last script that prints only the answer, in the form the question asks for."""

from dsstar_cli.model import Messages
from dsstar_cli.roles import render
from dsstar_cli.roles.context import RunContext
from dsstar_cli.roles.parsing import extract_code

ROLE = "finalizer"
parse = extract_code


def messages(context: RunContext, code: str, output: str) -> Messages:
    return render(ROLE, "finalize", context.brief, code=code.rstrip(), output=output)
