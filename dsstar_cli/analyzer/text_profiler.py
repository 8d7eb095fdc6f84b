"""Markdown and plain text: documents in full up to `max_text_bytes` (documents.py chooses what of
them a prompt shows), longer ones as an outline and their start."""

from __future__ import annotations

import re
from pathlib import Path

from dsstar_cli.analyzer.limits import AnalyzerLimits, read_text_head

IN_FULL = "shown in full:"  # How the first line of a description holding the whole text ends.
HEADING = re.compile(r"^(#{1,6})\s+(.+)$")
FIRST_LINES = 30
MAX_HEADINGS = 40


def profile_text(path: Path, limits: AnalyzerLimits) -> str:
    raw, size = read_text_head(path, limits.max_text_bytes, "text")
    text = raw.decode("utf-8", errors="replace")
    lines = text.splitlines()
    complete = len(raw) == size
    length = f"{len(lines):,} lines, {size:,} bytes" if complete else f"{size:,} bytes (first {len(raw):,} read)"
    if complete:
        return f"Text document, {length}, {IN_FULL}\n{text.strip()}"
    headings = [f"  line {n}: {m.group(1)} {m.group(2).strip()}" for n, line in enumerate(lines, 1)
                if (m := HEADING.match(line))]
    parts = [f"Text document, {length}; too long to show in full (read the file for details)."]
    if headings:
        parts.append(f"Outline ({len(headings)} headings):")
        parts.extend(headings[:MAX_HEADINGS])
    parts.append(f"First {min(FIRST_LINES, len(lines))} lines:")
    parts.extend(lines[:FIRST_LINES])
    return "\n".join(parts)
