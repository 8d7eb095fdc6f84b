"""What reaches a terminal: text from files, scripts and models with its control sequences made
visible. A file name, a cell, a script's output or a model reply could otherwise move the cursor,
clear the screen, set the window title or write the clipboard (OSC 52), or reorder what is shown
(right-to-left overrides): each such character is shown as its escape (`\\x1b`, `\\u202e`)."""

from __future__ import annotations

import atexit
import re
from typing import Callable, TextIO

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


def quiet_ctrl_c(stream: TextIO) -> Callable[[], None]:
    """Stop the terminal echoing Ctrl-C as `^C` while a live view is drawn on `stream`; returns
    what puts the setting back (also run at exit). The two characters land inside the live region
    at the cursor, and past its last column they push it a line down: Rich then erases and redraws
    a line off, leaving half a status line above the Answer panel. A no-op off a terminal."""
    try:
        import termios

        fd = stream.fileno()
        before = termios.tcgetattr(fd)
        after = list(before)
        after[3] &= ~termios.ECHOCTL  # the local modes
        termios.tcsetattr(fd, termios.TCSANOW, after)
    except Exception:  # No termios (Windows), no file descriptor, or not a terminal (termios.error).
        return lambda: None
    restored: list[bool] = []

    def restore() -> None:
        if not restored:
            restored.append(True)
            try:
                termios.tcsetattr(fd, termios.TCSANOW, before)
            except Exception:  # The terminal is gone: nothing to put back.
                pass

    atexit.register(restore)
    return restore
