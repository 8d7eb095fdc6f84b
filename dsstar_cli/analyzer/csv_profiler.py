"""CSV/TSV and other delimited text: delimiter, encoding, row count, columns."""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dsstar_cli.analyzer.frame import describe_frame
from dsstar_cli.analyzer.limits import AnalyzerLimits, ProfileError, read_text_head

ENCODINGS = ("utf-8-sig", "cp1252", "latin-1")  # latin-1 decodes any bytes, so it ends the chain.
SNIFF_BYTES = 64 * 1024
EXACT_COUNT_UP_TO = 64 * 1024 * 1024  # Larger files get a row count estimated from sampled blocks.
SPREAD_BLOCKS = 8                      # Blocks read from across a large file, beside its head,
SPREAD_BLOCK_BYTES = 256 * 1024        # so the profile sees more than the first rows.
HEAD_BYTES = 8 * 1024 * 1024
SAMPLE_ROWS = 20_000
LAYOUT_ROWS = 50          # Rows read to find the real header under title rows.
TAIL_BYTES = 64 * 1024    # Bytes read from the end to find footnote rows.
THOUSANDS = re.compile(r"^-?\d{1,3}(,\d{3})+(\.\d+)?$")


@dataclass
class Layout:
    """Where the table sits in the file: title rows above the header, footnote rows below it."""

    header_row: int = 0
    titles: tuple[str, ...] = ()
    footer_rows: int = 0
    footnotes: tuple[str, ...] = ()


def _filled(row: list[str]) -> int:
    return sum(1 for cell in row if cell.strip())


def detect_layout(path: Path, encoding: str, delimiter: str, size: int) -> Layout:
    """Spreadsheet exports often put a title and a blank row above the header and notes below the
    table. The header is the first row nearly as wide as the widest row, followed by a wide row."""
    with path.open("r", encoding=encoding, errors="replace", newline="") as handle:
        head = [row for _, row in zip(range(LAYOUT_ROWS), csv.reader(handle, delimiter=delimiter))]
    widths = [_filled(row) for row in head]
    if max(widths, default=0) < 2:
        return Layout()
    header = find_header_row(widths)
    titles = tuple(" ".join(c.strip() for c in row if c.strip()) for row in head[:header] if _filled(row))
    with path.open("rb") as handle:
        handle.seek(max(0, size - TAIL_BYTES))
        tail_text = handle.read().decode(encoding, errors="replace")
    tail = list(csv.reader(tail_text.splitlines()[1:], delimiter=delimiter))  # First line may be cut.
    footer = 0
    while footer < len(tail) and _filled(tail[-1 - footer]) <= 1 and footer < LAYOUT_ROWS:
        footer += 1
    notes = tuple(cell.strip() for row in tail[len(tail) - footer:] for cell in row if cell.strip())
    return Layout(header, titles, footer if footer < len(tail) else 0, notes)


def find_header_row(widths: list[int]) -> int:
    """Index of the first row nearly as wide as the widest (>= 75 %) followed by a wide row (>= 50 %)."""
    width = max(widths, default=0)
    wide, next_wide = math.ceil(0.75 * width), math.ceil(0.5 * width)
    return next((i for i, w in enumerate(widths[:-1]) if w >= wide and widths[i + 1] >= next_wide), 0)


def detect_encoding(head: bytes) -> str:
    for encoding in ENCODINGS:
        try:
            head.decode(encoding)
            return encoding
        except UnicodeDecodeError:
            continue
    return "latin-1"


def sniff_delimiter(text: str, suffix: str) -> str:
    if suffix == ".tsv":
        return "\t"
    try:
        return csv.Sniffer().sniff(text[:SNIFF_BYTES], delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def count_lines(path: Path, size: int) -> tuple[int, bool, list[bytes]]:
    """(lines, exact, spread blocks). Counts every newline up to a size; above it, estimates from
    the head and blocks spread through the file (mean line length), never reading the file whole.
    The spread blocks are returned so the profile can sample rows from them without reading again."""
    with path.open("rb") as handle:
        if size <= EXACT_COUNT_UP_TO:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b"")), True, []
        head, blocks = handle.read(HEAD_BYTES), _spread_blocks(handle, size)
    sampled = [head, *blocks]
    newlines = sum(block.count(b"\n") for block in sampled)
    return int(newlines * size / max(sum(len(b) for b in sampled), 1)), False, blocks


def _spread_blocks(handle, size: int) -> list[bytes]:
    blocks = []
    for k in range(1, SPREAD_BLOCKS + 1):
        handle.seek(size * k // (SPREAD_BLOCKS + 1))
        blocks.append(handle.read(SPREAD_BLOCK_BYTES))
    return blocks


def spread_rows(blocks: list[bytes], encoding: str, options: dict, columns: list[str]) -> pd.DataFrame | None:
    """Rows from blocks spread through a large file (whole lines only), parsed like the head.
    None when they do not parse (e.g. quoted fields spanning lines): the head sample stands alone."""
    lines = []
    for block in blocks:
        text = block.decode(encoding, errors="replace")
        lines.extend(text.split("\n")[1:-1])  # The first and last lines of a block are cut.
    if not lines:
        return None
    keep = {k: v for k, v in options.items() if k in ("sep", "thousands") and v is not None}
    try:
        return pd.read_csv(io.StringIO("\n".join(lines)), header=None, names=columns, **keep)
    except (pd.errors.ParserError, ValueError):
        return None


def profile_csv(path: Path, limits: AnalyzerLimits) -> str:
    head, size = read_text_head(path, SNIFF_BYTES, "delimited text", scan=SNIFF_BYTES)
    encoding = detect_encoding(head)
    delimiter = sniff_delimiter(head.decode(encoding, errors="replace"), path.suffix.lower())
    layout = detect_layout(path, encoding, delimiter, size)
    lines, exact, blocks = count_lines(path, size)
    options = {"sep": delimiter, "skiprows": layout.header_row or None}
    if layout.footer_rows:
        options.update(skipfooter=layout.footer_rows, engine="python")
    # pandas cannot combine skipfooter with nrows: a table with notes below is read whole when
    # small; a large one is sampled from the top, where the notes are not.
    whole = not layout.footer_rows or (exact and lines <= SAMPLE_ROWS)
    sample_options = options if whole else {**options, "skipfooter": None, "engine": None}
    nrows = None if layout.footer_rows and whole else SAMPLE_ROWS
    frame = _read_sample(path, encoding, sample_options, nrows)
    if _has_thousands_separators(frame):
        options["thousands"] = sample_options["thousands"] = ","
        frame = _read_sample(path, encoding, sample_options, nrows)
    rows = max(lines - 1 - layout.header_row - layout.footer_rows, len(frame))
    rows_text = (f"{rows:,} data rows" if exact else
                 f"about {rows:,} data rows (estimated from the first 8 MB and {SPREAD_BLOCKS} blocks spread "
                 "through the file; not counted)")
    sampled = f" (profiled from the first {len(frame):,} rows)" if len(frame) < rows else ""
    if len(frame) < rows and whole and not exact:
        extra = spread_rows(blocks, encoding, options, [str(c) for c in frame.columns])
        if extra is not None and len(extra.columns) == len(frame.columns):
            frame = pd.concat([frame, extra.astype(frame.dtypes.to_dict(), errors="ignore")], ignore_index=True)
            sampled = (f" (profiled from the first {len(frame) - len(extra):,} rows and {len(extra):,} rows "
                       f"spread through the file)")
    if encoding != "utf-8-sig":
        options["encoding"] = encoding
    loader = "pd.read_csv(path, " + ", ".join(f"{k}={v!r}" for k, v in options.items() if v is not None) + ")"
    summary = f"Delimited text, separator {delimiter!r}, encoding {encoding}; {rows_text}. Load with {loader}."
    notes = _layout_notes(layout, "thousands" in options)
    return "\n".join([summary, *notes, describe_frame(frame, limits.sample_rows, sampled)])


def _layout_notes(layout: Layout, thousands: bool) -> list[str]:
    notes = []
    if layout.header_row:
        notes.append(f"The real header is on line {layout.header_row + 1}; title rows above it: "
                     + " / ".join(repr(t) for t in layout.titles[:3]) + ".")
    if layout.footer_rows:
        notes.append(f"{layout.footer_rows} footnote row(s) below the table: "
                     + " / ".join(repr(n[:150]) for n in layout.footnotes[:3]) + ".")
    if thousands:
        notes.append("Numbers are written with ',' thousands separators (thousands=',' parses them).")
    return notes


def _read_sample(path: Path, encoding: str, options: dict, nrows: int | None) -> pd.DataFrame:
    options = {k: v for k, v in options.items() if v is not None}
    if options.get("engine") != "python":
        options["low_memory"] = False
    try:
        return pd.read_csv(path, encoding=encoding, nrows=nrows, **options)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise ProfileError(f"pandas cannot parse it as delimited text: {str(exc).splitlines()[0]}") from exc


def _has_thousands_separators(frame: pd.DataFrame) -> bool:
    """True when some text column holds numbers like "796,366" (most of its values)."""
    for name in frame.columns:
        values = frame[name].dropna()
        if values.dtype == object or pd.api.types.is_string_dtype(values):
            text = values.astype(str).head(200)
            if len(text) and text.str.match(THOUSANDS).mean() >= 0.8:
                return True
    return False
