"""A file whose profiling hit a bound is described as far as it was read: for a text format, its
first lines as they are on disk, read here with a hard cap on bytes (a zip bomb or a 500 MB line
costs no more than HEAD_BYTES), never blocking on anything that is not a regular file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

HEAD_BYTES = 64 * 1024
SHOWN_LINES = 8
SHOWN_CHARS = 300
TEXT_FORMATS = {"csv", "tsv", "jsonl", "json", "text", "markdown", "html", "code", "plain", "unknown"}


def head(path: Path) -> bytes | None:
    """Up to HEAD_BYTES from the start of a regular file; None if it cannot be read without risk."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, HEAD_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)


def first_lines(path: Path, fmt: str) -> str:
    """What the start of a text file shows ("" for binary formats: their containers are what bombs)."""
    if fmt not in TEXT_FORMATS:
        return ""
    content = head(path)
    if not content or b"\x00" in content[:4096]:
        return ""
    lines = content.decode("utf-8", errors="replace").splitlines()[:SHOWN_LINES]
    if len(content) == HEAD_BYTES and lines and "\n" not in content.decode("utf-8", errors="replace"):
        note = f"its first line is longer than the {HEAD_BYTES // 1024} KB read"
    else:
        note = f"the first {len(lines)} line(s) of the {len(content):,} bytes read"
    shown = "\n".join(line if len(line) <= SHOWN_CHARS else line[:SHOWN_CHARS] + " [... line cut ...]"
                      for line in lines)
    return f" As far as it was read ({note}):\n```\n{shown}\n```"
