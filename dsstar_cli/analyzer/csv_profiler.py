"""CSV/TSV and other delimited text: delimiter, encoding, row count, columns."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dsstar_cli.analyzer import swallowed
from dsstar_cli.analyzer.encoding import Utf8Check, choose
from dsstar_cli.analyzer.blocks import MAX_BYTES as BLOCKS_UP_TO, blocks_note
from dsstar_cli.analyzer.budget import Part, fit
from dsstar_cli.analyzer.frame import frame_parts
from dsstar_cli.analyzer.limits import AnalyzerLimits, ProfileError, read_text_head
from dsstar_cli.analyzer.number_format import number_format
from dsstar_cli.analyzer.table_shape import filled, first_row_is_data, has_index_column, header_row

SNIFF_BYTES = 64 * 1024
EXACT_COUNT_UP_TO = 64 * 1024 * 1024  # Larger files get a row count estimated from sampled blocks.
SPREAD_BLOCKS = 8                      # Blocks read from across a large file, beside its head,
SPREAD_BLOCK_BYTES = 256 * 1024        # so the profile sees more than the first rows.
HEAD_BYTES = 8 * 1024 * 1024
SAMPLE_ROWS = 20_000
LAYOUT_ROWS = 50          # Rows read to find the real header under title rows.
TAIL_BYTES = 64 * 1024    # Bytes read from the end to find footnote rows.


@dataclass
class Layout:
    """Where the table sits in the file: comment and title rows above the header, footnote rows
    below it; whether the first row is data (no header) and the first column a pandas index."""

    header_row: int = 0
    titles: tuple[str, ...] = ()
    footer_rows: int = 0
    footnotes: tuple[str, ...] = ()
    headerless: bool = False
    index_column: bool = False


def detect_layout(path: Path, encoding: str, delimiter: str, size: int) -> Layout:
    """Spreadsheet exports often put a title and a blank row above the header and notes below the
    table; tools put comment lines above it; some files have no header at all."""
    with path.open("r", encoding=encoding, errors="replace", newline="") as handle:
        head = [row for _, row in zip(range(LAYOUT_ROWS), csv.reader(handle, delimiter=delimiter))]
    header = header_row(head)
    titles = tuple(" ".join(c.strip() for c in row if c.strip()) for row in head[:header] if filled(row))
    table = [row for row in head[header:] if filled(row)]
    index_column = has_index_column(table)
    headerless = not index_column and first_row_is_data(table)
    widths = [filled(row) for row in head]
    if max(widths, default=0) < 2:
        return Layout(header, titles, headerless=headerless)
    with path.open("rb") as handle:
        handle.seek(max(0, size - TAIL_BYTES))
        tail_text = handle.read().decode(encoding, errors="replace")
    tail = list(csv.reader(tail_text.splitlines()[1:], delimiter=delimiter))  # First line may be cut.
    footer = 0
    while footer < len(tail) and filled(tail[-1 - footer]) <= 1 and footer < LAYOUT_ROWS:
        footer += 1
    notes = tuple(cell.strip() for row in tail[len(tail) - footer:] for cell in row if cell.strip())
    return Layout(header, titles, footer if footer < len(tail) else 0, notes, headerless, index_column)


def sniff_delimiter(text: str, suffix: str) -> str:
    if suffix in (".tsv", ".tab"):
        return "\t"
    try:
        return csv.Sniffer().sniff(text[:SNIFF_BYTES], delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def count_lines(path: Path, size: int, utf8: Utf8Check | None = None) -> tuple[int, bool, list[bytes]]:
    """(lines, exact, spread blocks). Counts every newline up to a size (checking the bytes are
    UTF-8 on the way, when given a check); above it, estimates from the head and blocks spread through the file (mean
    line length), never reading the file whole. The spread blocks are returned so the profile can
    sample rows from them without reading again."""
    with path.open("rb") as handle:
        if size <= EXACT_COUNT_UP_TO:
            lines = 0
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                lines += chunk.count(b"\n")
                if utf8 is not None:
                    utf8.feed(chunk)
            if utf8 is not None:
                utf8.feed(b"", final=True)
            return lines, True, []
        head, blocks = handle.read(HEAD_BYTES), _spread_blocks(handle, size)
    if utf8 is not None:
        utf8.feed(head)
        for block in blocks:
            utf8.feed(block, restart=True)
    sampled = [head, *blocks]
    newlines = sum(block.count(b"\n") for block in sampled)
    return int(newlines * size / max(sum(len(b) for b in sampled), 1)), False, blocks


def _spread_blocks(handle, size: int) -> list[bytes]:
    """SPREAD_BLOCKS blocks evenly spaced after the head, the last one the file's tail: rows
    appended late (and the odd byte that is not UTF-8 there) are seen too."""
    blocks = []
    for k in range(1, SPREAD_BLOCKS + 1):
        handle.seek((size - SPREAD_BLOCK_BYTES) * k // SPREAD_BLOCKS)
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
    keep = {k: v for k, v in options.items() if k in ("sep", "thousands", "decimal", "dtype")}
    try:
        return pd.read_csv(io.StringIO("\n".join(lines)), header=None, names=columns, **keep)
    except (pd.errors.ParserError, ValueError):
        return None


def loader_options(delimiter: str, encoding: str | None, layout: Layout) -> dict:
    """The keyword arguments of the described `pd.read_csv` call, in the order shown."""
    options: dict = {"sep": delimiter}
    if encoding:
        options["encoding"] = encoding
    if layout.header_row:
        options["skiprows"] = layout.header_row
    if layout.headerless:
        options["header"] = None
    if layout.index_column:
        options["index_col"] = 0
    if layout.footer_rows:
        options.update(skipfooter=layout.footer_rows, engine="python")
    return options


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def profile_csv(path: Path, limits: AnalyzerLimits) -> str:
    head, size = read_text_head(path, SNIFF_BYTES, "delimited text", scan=SNIFF_BYTES)
    utf8 = Utf8Check()
    lines, exact, blocks = count_lines(path, size, utf8)
    encoding, encoding_name = choose(head, utf8, exact)
    text_encoding = encoding or "utf-8"
    delimiter = sniff_delimiter(head.decode(text_encoding, errors="replace"), path.suffix.lower())
    layout = detect_layout(path, text_encoding, delimiter, size)
    header_lines = layout.header_row + (0 if layout.headerless else 1)
    whole = exact and lines - header_lines - layout.footer_rows <= SAMPLE_ROWS
    options = loader_options(delimiter, encoding, layout)
    # pandas cannot combine skipfooter with nrows: a table with notes below is read whole when
    # small; a large one is sampled from the top, where the notes are not.
    read_options = {k: v for k, v in options.items() if whole or k not in ("skipfooter", "engine")}
    nrows = None if whole else SAMPLE_ROWS
    raw = _read_sample(path, {**read_options, "dtype": str}, nrows)
    spread = not whole and not exact and not layout.footer_rows
    raw_spread = spread_rows(blocks, text_encoding, {"sep": delimiter, "dtype": str}, list(raw.columns)) \
        if spread else None
    numbers = number_format(raw if raw_spread is None else pd.concat([raw, raw_spread], ignore_index=True))
    options.update(numbers.options)
    read_options = {**read_options, **{k: options[k] for k in ("thousands", "decimal", "dtype") if k in options}}
    frame = _read_sample(path, read_options, nrows)
    if whole:
        rows_text = _plural(len(frame), "data row")
        rows = len(frame)
    else:
        rows = max(lines - header_lines - layout.footer_rows, len(frame))
        rows_text = (f"{rows:,} data rows (counted as lines)" if exact else
                     f"about {rows:,} data rows (estimated from the first 8 MB and {SPREAD_BLOCKS} blocks spread "
                     "through the file; not counted)")
    sampled = f" (figures from the first {len(frame):,} of {rows:,} rows)" if len(frame) < rows else ""
    if spread:
        extra = spread_rows(blocks, text_encoding, options, [str(c) for c in frame.columns])
        if extra is not None and len(extra.columns) == len(frame.columns):
            frame = pd.concat([frame, extra.astype(frame.dtypes.to_dict(), errors="ignore")], ignore_index=True)
            sampled = (f" (figures from the first {len(frame) - len(extra):,} rows and {len(extra):,} rows "
                       f"spread through the file)")
    loader = "pd.read_csv(path, " + ", ".join(f"{k}={v!r}" for k, v in options.items()) + ")"
    summary = f"Delimited text, separator {delimiter!r}, encoding {encoding_name}; {rows_text}. Load with {loader}."
    notes = _layout_notes(layout)
    # Every line a row (a small file read whole): no quote swallowed any, so no need to look.
    every_line_a_row = whole and lines - header_lines - layout.footer_rows <= rows
    broken = None if every_line_a_row else swallowed.scan(path, text_encoding, delimiter, layout.header_row)
    if broken:
        notes.insert(0, swallowed.note(broken))
    if numbers.note:
        notes.append(numbers.note)
    stacked = blocks_note(path.read_text(text_encoding, errors="replace"), delimiter, options) \
        if exact and size <= BLOCKS_UP_TO else None
    if stacked:
        notes.append(stacked)
    repeats = repeated_header_rows(raw)
    if repeats:
        notes.append(f"The header repeats at data row(s) {', '.join(map(str, repeats[:5]))} (0-based): several "
                     "tables stacked in one.")
    return fit([Part(summary), *map(Part, notes), *frame_parts(frame, limits.sample_rows, sampled)],
               limits.max_description_chars)


def repeated_header_rows(raw: pd.DataFrame) -> list[int]:
    """Positions of rows (of the table read as text) that repeat the column names in most of
    their cells, two at least: several tables stacked under one header."""
    if len(raw.columns) < 2 or raw.empty:
        return []
    names = np.array([str(c) for c in raw.columns], dtype=object)
    same = (raw.to_numpy(dtype=object) == names).sum(axis=1)
    return [int(i) for i in np.flatnonzero(same >= max(2, (len(names) + 1) // 2))]


FOOTNOTE_CHARS = 600  # Footnotes hold definitions ("Metropolitan Areas are defined by ..."): whole, mostly.


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " [...]"


def _layout_notes(layout: Layout) -> list[str]:
    notes = []
    if layout.header_row:
        notes.append(f"The real header is on line {layout.header_row + 1}; title rows above it: "
                     + " / ".join(repr(t[:100]) for t in layout.titles[:3]) + ".")
    if layout.headerless:
        notes.append("No header row: the first line is data (header=None numbers the columns).")
    if layout.index_column:
        notes.append("The first column is a pandas index under an empty header cell (index_col=0).")
    if layout.footer_rows:
        notes.append(f"{layout.footer_rows} footnote row(s) below the table: "
                     + " / ".join(repr(_cut(n, FOOTNOTE_CHARS)) for n in layout.footnotes[:3]) + ".")
    return notes


def _read_sample(path: Path, options: dict, nrows: int | None) -> pd.DataFrame:
    extra = {} if options.get("engine") == "python" else {"low_memory": False}
    try:
        return pd.read_csv(path, nrows=nrows, **options, **extra)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise ProfileError(f"pandas cannot parse it as delimited text: {str(exc).splitlines()[0]}") from exc
