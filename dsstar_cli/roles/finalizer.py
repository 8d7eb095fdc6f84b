"""Finalizer: a last script that prints only the answer, in the form the question asks for."""

from dsstar_cli.model import Messages
from dsstar_cli.roles import render
from dsstar_cli.roles.parsing import extract_code

ROLE = "finalizer"
parse = extract_code
DEFAULT_GUIDELINES = ("None given: answer concisely (a number, a name, a list or one short sentence); "
                      "keep numbers as computed unless the question asks for rounding.")


def messages(question: str, guidelines: str | None, code: str, output: str) -> Messages:
    return render(ROLE, "finalize", question=question, guidelines=guidelines or DEFAULT_GUIDELINES,
                  code=code.rstrip(), output=output)
