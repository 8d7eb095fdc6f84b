"""Debugger: summarise the traceback (deterministically: no model call), then ask for a repair."""

import re

from dsstar_cli.model import Messages
from dsstar_cli.roles import keep_evidence, render
from dsstar_cli.roles.context import RunContext
from dsstar_cli.roles.parsing import extract_code

ROLE = "debugger"
parse = extract_code
MAX_ERROR_LINES = 30
# Frames from the interpreter's and libraries' own files say little about the script's mistake.
NOISE = re.compile(r'File "[^"]*(site-packages|/lib/python3|runpy\.py|sandbox/worker\.py|<frozen)')


def summarize_error(error: str) -> str:
    """The script's own frames and the exception, without library internals."""
    lines = error.rstrip().splitlines()
    kept: list[str] = []
    skip_source = False
    for line in lines:
        if line.lstrip().startswith("File "):
            skip_source = bool(NOISE.search(line))
            if skip_source:
                continue
        elif skip_source and line.startswith("    "):
            continue
        else:
            skip_source = False
        kept.append(line)
    if len(kept) > MAX_ERROR_LINES:
        kept = kept[:5] + ["    ..."] + kept[-(MAX_ERROR_LINES - 6):]
    return "\n".join(kept) or "(no error output)"


MAX_PRINTED_CHARS = 3000


def messages(context: RunContext, code: str, error: str, printed: str = "") -> Messages:
    """`printed`: the script's stdout before it failed (how far it got, and what it saw)."""
    shown = keep_evidence(printed.strip(), MAX_PRINTED_CHARS) if printed.strip() else "(nothing)"
    return render(ROLE, "repair", context.full, code=code.rstrip(), error=summarize_error(error), printed=shown)
