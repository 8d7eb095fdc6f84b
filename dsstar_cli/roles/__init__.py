"""The agent's roles. Each role has one prompt template (prompts/<role>.md, our own text) and
one reply parser (parsing.py); this module renders the templates into chat messages: the run's
shared context (context.py) as the system message, the role's instructions and task as the user's."""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from importlib import resources
from string import Template

from dsstar_cli.model import Messages

SECTION = re.compile(r"^\[(\w+)\]\s*$", re.MULTILINE)
# A line that labels a result ("total revenue: 1234.5", "rows = 12", "Step 2 - unmatched: [...]").
LABELLED = re.compile(r"^\s*[A-Za-z][^\n]{0,80}?(:|=|->)\s*\S")
MAX_LABELLED_LINE = 400


@lru_cache(maxsize=None)
def template_sections(role: str) -> dict[str, Template]:
    """A template file holds named sections: `[role]` (the role's standing instructions), then one
    per kind of request, and `[reminder]`."""
    text = resources.files("dsstar_cli.roles").joinpath("prompts", f"{role}.md").read_text(encoding="utf-8")
    pieces = SECTION.split(text)
    return {name: Template(body.strip()) for name, body in zip(pieces[1::2], pieces[2::2])}


def render(role: str, section: str, context: str, **values: str) -> Messages:
    """The shared context (identical across the run: a cacheable prefix), then the role's
    instructions and the named section, with $placeholders filled in."""
    sections = template_sections(role)
    if not context:  # A role outside the loop (the analyzer's describer): its instructions are the system text.
        return [{"role": "system", "content": sections["role"].substitute(values)},
                {"role": "user", "content": sections[section].substitute(values)}]
    task = sections["role"].substitute(values) + "\n\n" + sections[section].substitute(values)
    return [{"role": "system", "content": context}, {"role": "user", "content": task}]


# What generated scripts may import, as pip names them (scikit-learn is imported as sklearn).
SCRIPT_LIBRARIES = ("pandas", "numpy", "duckdb", "pyarrow", "openpyxl", "scipy", "statsmodels", "scikit-learn",
                    "matplotlib")


@lru_cache(maxsize=None)
def libraries() -> str:
    """The interpreter and data libraries the scripts run with (the sandbox uses dsstar's own
    interpreter), read from the packages' metadata: nothing is imported."""
    from importlib import metadata

    found = []
    for name in SCRIPT_LIBRARIES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        str_dtype = name == "pandas" and int(version.split(".")[0]) >= 3
        note = " (text columns have dtype 'str', not 'object')" if str_dtype else ""
        found.append(f"{name} {version}{note}")
    return f"Python {sys.version.split()[0]}; " + ", ".join(found)


def format_reminder(role: str, **values: str) -> str:
    """The short text sent when a reply was not in the form asked for."""
    return template_sections(role)["reminder"].safe_substitute(values)


def numbered(steps: list[str]) -> str:
    return "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1)) or "(no steps yet)"


def clip(text: str, max_chars: int) -> str:
    """Keep the head and the tail of a long output: results are usually printed at the end."""
    if len(text) <= max_chars:
        return text
    half = max_chars // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def keep_evidence(text: str, max_chars: int) -> str:
    """A long output cut to `max_chars`, keeping what a reviewer checks: every labelled result line
    (in order, while they fit in two thirds of the room) and the end, with a marker saying how much went."""
    if len(text) <= max_chars:
        return text
    kept, tail = _evidence(text, max_chars)
    marker = (f"[... output cut: {len(text):,} characters printed, {_cut(text, kept, tail):,} cut; kept "
              f"{len(kept)} labelled line(s) above and the last {len(tail):,} characters below ...]")
    return "\n".join(kept + [marker, tail])


def evidence_cut(text: str, max_chars: int) -> int:
    """How many characters of `text` keep_evidence leaves out (0 when it fits)."""
    return 0 if len(text) <= max_chars else _cut(text, *_evidence(text, max_chars))


def _cut(text: str, kept: list[str], tail: str) -> int:
    return len(text) - sum(len(line) + 1 for line in kept) - len(tail)


def _evidence(text: str, max_chars: int) -> tuple[list[str], str]:
    tail_room = max_chars // 3
    head, tail = text[:-tail_room], text[-tail_room:]
    room = max_chars - tail_room - 120
    kept: list[str] = []
    for line in head.splitlines():
        if LABELLED.match(line):
            line = line if len(line) <= MAX_LABELLED_LINE else line[:MAX_LABELLED_LINE] + " [...]"
            if len(line) + 1 > room:
                break
            kept.append(line)
            room -= len(line) + 1
    return kept, tail


def code_block(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"
