"""A figure shown inline, in a terminal that says it can show one: kitty's graphics protocol (kitty,
Ghostty) or iTerm2's inline images (iTerm2, WezTerm). Everywhere else nothing is sent but the
figure's path line (display.artifact_lines).

Support is read from the environment only (TERM, TERM_PROGRAM, KITTY_WINDOW_ID, LC_TERMINAL),
never asked of the terminal: a query is itself an escape sequence, its answer arrives on stdin
(where a piped question or the user's typing is), and a terminal that does not answer makes the
asker wait. Inside tmux or screen, which pass these sequences on only when told to, nothing is
sent. The image libraries on PyPI were weighed and none used: textual-image queries the terminal
when imported and writes to stdout, term-image queries too and holds pillow below 11. Both
protocols take a PNG as it is; the figure is re-encoded by pillow first (bounded in bytes and
pixels, scaled to the terminal), so what reaches the terminal is a PNG pillow made, not the
script's bytes."""

from __future__ import annotations

import base64
import io
import os
import stat
from typing import IO, Mapping

KITTY, ITERM2 = "kitty", "iterm2"
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_PIXELS = 25_000_000
MAX_WIDTH_PX = 1200
CHUNK = 4096  # kitty: base64 payload per escape sequence


def protocol(stream: IO[str], env: Mapping[str, str] | None = None) -> str | None:
    """The image protocol the terminal behind `stream` declares, or None (a pipe, a file, an
    unknown terminal, a multiplexer in between)."""
    env = os.environ if env is None else env
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError, OSError):
        return None
    term = env.get("TERM", "")
    if env.get("TMUX") or term.startswith(("screen", "tmux")) or term in ("", "dumb"):
        return None
    if term in ("xterm-kitty", "xterm-ghostty") or env.get("KITTY_WINDOW_ID"):
        return KITTY
    if env.get("TERM_PROGRAM") in ("iTerm.app", "WezTerm") or env.get("LC_TERMINAL") == "iTerm2":
        return ITERM2
    return None


def png_for_terminal(path: str) -> bytes | None:
    """The figure at `path` as a PNG at most MAX_WIDTH_PX wide, or None when it is not an image
    pillow reads, is too big, or is not a regular file (a link is never followed)."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(handle, "rb") as file:
        found = os.fstat(file.fileno())
        if not stat.S_ISREG(found.st_mode) or not 0 < found.st_size <= MAX_FILE_BYTES:
            return None
        data = file.read(MAX_FILE_BYTES + 1)
    from PIL import Image  # Only when there is a figure to show.

    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.width * image.height > MAX_PIXELS:
                return None
            image.load()
            if image.width > MAX_WIDTH_PX:
                image = image.resize((MAX_WIDTH_PX, max(1, image.height * MAX_WIDTH_PX // image.width)))
            out = io.BytesIO()
            image.convert("RGBA").save(out, format="PNG")
            return out.getvalue()
    except Exception:  # noqa: BLE001 - whatever a script left, it is only not shown.
        return None


def escape_sequence(kind: str, png: bytes, columns: int) -> str:
    """The sequence that draws `png`, `columns` cells wide, at the cursor."""
    payload = base64.b64encode(png).decode("ascii")
    if kind == ITERM2:
        return f"\x1b]1337;File=inline=1;size={len(png)};width={columns};preserveAspectRatio=1:{payload}\x07"
    parts = [payload[i:i + CHUNK] for i in range(0, len(payload), CHUNK)] or [""]
    out = []
    for i, part in enumerate(parts):
        more = 1 if i < len(parts) - 1 else 0
        # a=T: transmit and show; f=100: PNG; q=2: no reply (it would land on stdin); c: width in cells.
        head = f"a=T,f=100,q=2,c={columns},m={more}" if i == 0 else f"q=2,m={more}"
        out.append(f"\x1b_G{head};{part}\x1b\\")
    return "".join(out)


def show(path: str, stream: IO[str], kind: str, columns: int) -> bool:
    """Draw the figure at `path` on `stream` (a terminal that declared `kind`); False when it
    could not be read as an image (its path line is all the user gets then)."""
    png = png_for_terminal(path)
    if png is None:
        return False
    stream.write(escape_sequence(kind, png, columns) + "\n")
    stream.flush()
    return True
