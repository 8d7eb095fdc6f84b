"""One line of what a file holds, read off its description: what the retriever shows of a file it
lists without describing, so the planner can tell whether to load it.

Each kind of file says it its own way: a table its title, rows and first columns; a database its
tables; a document (or plain text) its title or first line; a compressed file what it unpacks to;
anything else its description's first line, which each profiler writes as its summary (JSON its
shape and an example, a workbook its sheets, a web page its title and tables, code its language
and definitions)."""

from __future__ import annotations

import re

from dsstar_cli.analyzer.documents import DOCUMENT_FORMATS

GIST_CHARS = 160
TABLE_FORMATS = frozenset({"csv", "tsv", "jsonl", "parquet", "feather"})  # and "<format> dataset"
TEXT_FORMATS = DOCUMENT_FORMATS | {"plain"}
ONE_FILE_COMPRESSED = frozenset({"gzip", "bzip2", "xz"})

_TITLE = re.compile(r"title rows? above it: (.+?)\.?$", re.MULTILINE)
_ROWS = re.compile(r"([\d,]+) (?:data rows?|rows \(exact|rows in all)")
_COLUMN = re.compile(r"^- (.+?): ", re.MULTILINE)
_NAMES = re.compile(r"^(?:\d[\d,]* columns?[^:\n]*|  names): (.+)$", re.MULTILINE)
_HEADING = re.compile(r"^\s*(?:line \d+: )?#{1,6}\s+(\S.*)$", re.MULTILINE)
_INNER = re.compile(r"-compressed (\S+) file")
_SQL_TABLE = re.compile(r"^(?:Table|View) '(.+?)': ([\d,]+) rows", re.MULTILINE)
_SHOWN = r"[,;] (?:shown|too long)|\. (?:Its whole text|Too long)"  # Where a text's first line says how it is shown.


def gist(fmt: str, description: str, limit: int = GIST_CHARS) -> str:
    """At most `limit` characters, on one line, of what a file of format `fmt` holds."""
    return _summary(fmt, description).replace("\n", " ").strip()[:limit]  # Column names keep their spaces.


def _summary(fmt: str, text: str) -> str:
    first, _, rest = text.partition("\n")
    kind = fmt.split(" ")[0]  # "csv dataset": a table too.
    if kind in TABLE_FORMATS:
        return _table(text) or first
    if kind in TEXT_FORMATS:
        return _document(first, rest)
    if kind in ONE_FILE_COMPRESSED and (inner := _INNER.search(first)):
        if rest.startswith("Profiled from the first"):  # Only a prefix was unpacked: a note first.
            rest = rest.partition("\n")[2]
        return f"{first.partition(';')[0]}: {_summary(inner.group(1), rest)}"
    if kind == "code":  # Language, size and definitions (code_profiler.py).
        return re.split(_SHOWN, first)[0]
    if kind == "sqlite":
        tables = [f"{name} ({rows} rows)" for name, rows in _SQL_TABLE.findall(text)]
        return f"{first.partition('.')[0]}: {', '.join(tables)}" if tables else first
    return first


def _table(text: str) -> str:
    """Title, rows and the first column names ("" when the description shows none of them)."""
    title, rows, names = _TITLE.search(text), _ROWS.search(text), _NAMES.search(text)
    columns = names.group(1).split(", ") if names else _COLUMN.findall(text)
    parts = [title.group(1)[:120] if title else "", f"{rows.group(1)} rows" if rows else "",
             "columns " + ", ".join(columns[:10]) + (", ..." if len(columns) > 10 else "") if columns else ""]
    return "; ".join(p for p in parts if p)


def _document(first: str, rest: str) -> str:
    """What the text is (its kind and length) and its title: its first heading, else its first line."""
    kind = re.split(_SHOWN, first)[0]
    heading = _HEADING.search(rest)
    lines = [line.strip() for line in rest.splitlines()  # Not the outline's or the fence's own lines.
             if line.strip() and not re.match(r"(Outline \(|First \d+ lines?:|```)", line.strip())]
    title = heading.group(1) if heading else (lines[0] if lines else "")
    return f"{kind}: {title}" if title else kind
