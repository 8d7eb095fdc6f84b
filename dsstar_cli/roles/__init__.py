"""The agent's roles. Each role has one prompt template (prompts/<role>.md, our own text) and
one reply parser (parsing.py); this module renders the templates into chat messages."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from string import Template

from dsstar_cli.model import Messages

SECTION = re.compile(r"^\[(\w+)\]\s*$", re.MULTILINE)


@lru_cache(maxsize=None)
def template_sections(role: str) -> dict[str, Template]:
    """A template file holds named sections: `[system]`, then one per kind of request."""
    text = resources.files("dsstar_cli.roles").joinpath("prompts", f"{role}.md").read_text(encoding="utf-8")
    pieces = SECTION.split(text)
    return {name: Template(body.strip()) for name, body in zip(pieces[1::2], pieces[2::2])}


def render(role: str, section: str, **values: str) -> Messages:
    """System prompt plus the named user section, with $placeholders filled in."""
    sections = template_sections(role)
    return [
        {"role": "system", "content": sections["system"].substitute(values)},
        {"role": "user", "content": sections[section].substitute(values)},
    ]


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


def code_block(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"
