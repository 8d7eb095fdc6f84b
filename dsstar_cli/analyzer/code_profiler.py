"""Source code and plain text of an unknown kind, described without a model call and never run.

A script in a data folder (`clean.py`, `load.R`, `schema.sql`) often says how the data was made or
is meant to be read: its text is the description (whole when it is small; else its definitions
with line numbers and its first lines). Text in a format dsstar has no profiler for (`.dat`,
`.log`, `.yaml`, no extension) is shown the same way. Asking the model to write a script that
describes such a file costs a call and gives back whatever that script printed."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from dsstar_cli.analyzer.limits import AnalyzerLimits, read_text_head

LANGUAGES = {
    ".py": "Python", ".pyw": "Python", ".r": "R", ".sql": "SQL", ".sh": "Shell", ".bash": "Shell",
    ".zsh": "Shell", ".js": "JavaScript", ".mjs": "JavaScript", ".cjs": "JavaScript", ".ts": "TypeScript",
    ".java": "Java", ".scala": "Scala", ".kt": "Kotlin", ".c": "C", ".h": "C", ".cpp": "C++", ".cc": "C++",
    ".cxx": "C++", ".hpp": "C++", ".cs": "C#", ".go": "Go", ".rs": "Rust", ".rb": "Ruby", ".pl": "Perl",
    ".php": "PHP", ".jl": "Julia", ".lua": "Lua", ".swift": "Swift", ".do": "Stata", ".sas": "SAS",
    ".ps1": "PowerShell", ".bat": "Batch", ".awk": "AWK",
}
SHEBANGS = {"python": "Python", "rscript": "R", "bash": "Shell", "sh": "Shell", "zsh": "Shell",
            "node": "JavaScript", "perl": "Perl", "ruby": "Ruby", "julia": "Julia"}
# A definition's name, per family of languages: def/class/function/fn..., R's `f <- function`,
# JavaScript's `const f = (...) =>`, SQL's CREATE TABLE/VIEW/FUNCTION, shell's `f() {`.
DEFINITIONS = [re.compile(pattern, re.IGNORECASE) for pattern in (
    r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:def|class|function|func|fn|sub|procedure|struct|trait|"
    r"interface|enum)\s+([\w.$]+(?:::[\w$]+)*)",
    r"^\s*([\w.$]+)\s*(?:<<?-|=)\s*function\b",
    r"^\s*(?:export\s+)?(?:const|let|var)\s+([\w$]+)\s*=\s*(?:async\s*)?(?:\([^)]*\)|[\w$]+)\s*=>",
    r"^\s*create\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+)?(?:materialized\s+)?(?:table|view|function|"
    r"procedure)\s+(?:if\s+not\s+exists\s+)?([\w.\"`\[\]]+)",
    r"^\s*(?:function\s+)?([\w.-]+)\s*\(\)\s*\{",
)]
NAMED = 8               # Definitions named on the first line.
MAX_OUTLINE = 40        # Definitions listed with their line numbers.
LINE_CHARS = 200        # A longer line is cut where the text is shown by its first lines.
ROOM_FOR_NOTES = 500    # Of the description cap: kept for the first line and the outline's heading.


def language_of(path: Path, head: bytes) -> str | None:
    """The programming language, from the name's suffix or a `#!` line; None for anything else."""
    language = LANGUAGES.get(path.suffix.lower())
    if language or not head.startswith(b"#!"):
        return language
    words = head[2:].split(b"\n", 1)[0].decode("ascii", errors="replace").lower().replace("/", " ").split()
    found = [SHEBANGS[word.rstrip("0123456789.")] for word in words if word.rstrip("0123456789.") in SHEBANGS]
    return found[0] if found else None


def is_text(head: bytes) -> bool:
    """Readable text: no NUL byte, and UTF-8 (its last character may be cut) or Windows-1252
    without control characters."""
    if b"\x00" in head:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
        return True
    except UnicodeDecodeError:
        pass
    if any(b < 32 and b not in b"\t\n\r\f" for b in head):
        return False
    try:
        head.decode("cp1252")
        return True
    except UnicodeDecodeError:
        return False


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:  # A character cut at the read's end, or another encoding.
        text = raw.decode("utf-8", errors="replace")
        return text if text.count("\ufffd") <= 1 else raw.decode("cp1252", errors="replace")


def outline(lines: list[str]) -> list[tuple[int, str, str]]:
    """(line number, the definition's line, its name) of each definition, in order."""
    found = []
    for number, line in enumerate(lines, 1):
        for pattern in DEFINITIONS:
            if match := pattern.match(line):
                found.append((number, line.rstrip(), match.group(1)))
                break
    return found


def profile_code(path: Path, limits: AnalyzerLimits) -> str:
    raw, size = read_text_head(path, limits.max_text_bytes, "source code")
    return describe_text(path, raw, size, language_of(path, raw[:256]) or "Program", limits)


def profile_plain(path: Path, limits: AnalyzerLimits) -> str:
    raw, size = read_text_head(path, limits.max_text_bytes, "text")
    return describe_text(path, raw, size, None, limits)


def describe_text(path: Path, raw: bytes, size: int, language: str | None, limits: AnalyzerLimits) -> str:
    """What the file is, then its text: whole when it fits the description's cap, else the outline
    of its definitions and as many first lines as fit."""
    text = _decode(raw)
    lines = text.splitlines()
    complete = len(raw) == size
    length = f"{len(lines):,} lines, {size:,} bytes" if complete else f"{size:,} bytes (first {len(raw):,} read)"
    if language:
        kind = f"{language} source code, {length} (not run by the analyzer)"
    else:
        suffix = f"extension {path.suffix!r}" if path.suffix else "no extension"
        kind = f"Plain text ({suffix}, a format without a built-in profiler), {length}"
    definitions = outline(lines) if language else []
    top = list(dict.fromkeys(name for _, line, name in definitions if line == line.lstrip()))
    top = top or list(dict.fromkeys(name for _, _, name in definitions))
    if top:
        kind += f"; defines {', '.join(top[:NAMED])}" + (f" and {len(top) - NAMED} more" if len(top) > NAMED else "")
    fence = (language or "text").lower().replace("c++", "cpp").replace("c#", "csharp")
    room = limits.max_description_chars - ROOM_FOR_NOTES
    if complete and len(text) <= room:
        return f"{kind}. Its whole text:\n```{fence}\n{text.rstrip()}\n```"
    parts = [f"{kind}. Too long to show whole (read the file for the rest)."]
    listed = [f"  line {n}: {line.strip()[:LINE_CHARS // 2]}" for n, line, _ in definitions[:MAX_OUTLINE]]
    while listed and sum(len(entry) + 1 for entry in listed) > room // 2:  # Half the room: lines get the rest.
        listed.pop()
    if listed:
        more = f" (the first {len(listed)})" if len(listed) < len(definitions) else ""
        parts += [f"Definitions ({len(definitions)}){more}:", *listed]
    room -= sum(len(part) + 1 for part in parts)
    shown = []
    for line in lines:
        line = line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " [... line cut ...]"
        if room - len(line) - 1 < 0:
            break
        shown.append(line)
        room -= len(line) + 1
    parts.append(f"First {len(shown)} lines:\n```{fence}\n" + "\n".join(shown) + "\n```")
    return "\n".join(parts)
