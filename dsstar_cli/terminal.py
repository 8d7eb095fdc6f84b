"""What reaches a terminal: text from files, scripts and models with its control sequences made
visible. A file name, a cell, a script's output or a model reply could otherwise move the cursor,
clear the screen, set the window title or write the clipboard (OSC 52), or reorder what is shown
(right-to-left overrides): each such character is shown as its escape (`\\x1b`, `\\u202e`)."""

from __future__ import annotations

import re

from dsstar_cli.events import Event, Sink
from dsstar_cli.textmap import map_fields

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional formatting characters.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control or bidi-override character replaced by its visible escape."""
    return _UNSAFE.sub(_escape, text)


def terminal_safe(sink: Sink) -> Sink:
    """A display sink that only ever sees events whose text is safe to print."""

    def emit(event: Event) -> None:
        sink(map_fields(event, visible))

    return emit
