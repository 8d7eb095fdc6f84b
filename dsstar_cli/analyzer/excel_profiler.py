"""Excel workbooks: every sheet, with its size, where its real header is, merged cells and columns.
Formulas are read as their cached values (what a person sees), not as formula text."""

from __future__ import annotations

import math
import warnings
import zipfile
from pathlib import Path

import pandas as pd

from dsstar_cli.analyzer.table_shape import filled, first_row_is_data, has_index_column, header_row
from dsstar_cli.analyzer.budget import Fitted, Part, fit
from dsstar_cli.analyzer.frame import frame_parts
from dsstar_cli.analyzer.limits import AnalyzerLimits, NoData

FULL_SHEET_CELLS = 400_000  # Sheets up to this many cells are read whole; larger ones from the top.
MAX_SHEETS = 30
LAYOUT_ROWS = 30
MERGED_UP_TO_BYTES = 10 * 1024 * 1024  # Merged ranges need a full (non-streaming) load: small files only.

# openpyxl warns about workbook features it drops (extensions, data validation): noise for us.
warnings.filterwarnings("ignore", category=UserWarning, module="openpyxl")


def profile_excel(path: Path, limits: AnalyzerLimits) -> Fitted:
    import openpyxl  # Imported here: only folders with workbooks pay for it.

    try:
        # read_only streams the sheets; data_only gives formulas' cached values, not the formulas.
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, TypeError) as exc:
        raise NoData(f"not a readable Excel workbook: {exc}") from exc
    try:
        sheets = [(ws.title, ws.max_row or 0, ws.max_column or 0) for ws in workbook.worksheets]
    finally:
        workbook.close()
    merged = _merged_ranges(path) if path.stat().st_size <= MERGED_UP_TO_BYTES else {}
    listing = ", ".join(f"{title!r} ({rows:,} rows x {cols:,} columns)" for title, rows, cols in sheets)
    parts = [Part(f"Excel workbook with {len(sheets)} sheet(s): {listing}.")]
    for title, max_row, max_col in sheets[:MAX_SHEETS]:
        parts.append(Part(""))
        parts.extend(_describe_sheet(path, title, max_row, max_col, merged.get(title, []), limits))
    if len(sheets) > MAX_SHEETS:
        parts.append(Part(f"... and {len(sheets) - MAX_SHEETS} more sheets not described."))
    return fit(parts, limits.max_description_chars)  # Every sheet's columns before any sample rows.


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _describe_sheet(path: Path, title: str, max_row: int, max_col: int, merged: list[str],
                    limits: AnalyzerLimits) -> list[Part]:
    top = pd.read_excel(path, sheet_name=title, header=None, nrows=LAYOUT_ROWS, engine="openpyxl")
    if top.empty:
        return [Part(f"Sheet {title!r}: empty.")]
    head = [[_text(v) for v in row] for row in top.itertuples(index=False)]
    header = header_row(head)
    table = [row for row in head[header:] if filled(row)]
    index_column = has_index_column(table)
    headerless = not index_column and first_row_is_data(table)
    options: dict = {"sheet_name": title}
    if header:
        options["skiprows"] = header
    if headerless:
        options["header"] = None
    if index_column:
        options["index_col"] = 0
    whole = max_row * max(max_col, 1) <= FULL_SHEET_CELLS
    nrows = None if whole else max(FULL_SHEET_CELLS // max(max_col, 1), 100)
    frame = pd.read_excel(path, **options, nrows=nrows, engine="openpyxl")
    whole = whole or len(frame) < nrows  # The sheet ended before the budget did.
    rows = len(frame) if whole else max(max_row - header - (0 if headerless else 1), len(frame))
    loader = "pd.read_excel(path, " + ", ".join(f"{k}={v!r}" for k, v in options.items()) + ")"
    counted = "" if whole else " (per the sheet's dimensions)"
    lines = [f"Sheet {title!r}: {rows:,} data row{'' if rows == 1 else 's'}{counted}. Load with {loader}."]
    if header:
        titles = [" ".join(c for c in head[i] if c) for i in range(header)]
        lines.append(f"The real header is on row {header + 1}; above it: "
                     + " / ".join(repr(t[:100]) for t in titles if t)[:300] + ".")
    if headerless:
        lines.append("No header row: the first row is data (header=None numbers the columns).")
    if index_column:
        lines.append("The first column is a pandas index under an empty header cell (index_col=0).")
    if merged:
        lines.append(f"Merged cells ({len(merged)}): {', '.join(merged[:10])}" + (" ..." if len(merged) > 10 else "")
                     + " (pandas fills only the first cell of each).")
    sampled = f" (figures from the first {len(frame):,} of {rows:,} rows)" if len(frame) < rows else ""
    parts = [Part(line) for line in lines]
    return parts + (frame_parts(frame, limits.sample_rows, sampled) if len(frame.columns) else [Part("(no columns)")])


def _merged_ranges(path: Path) -> dict[str, list[str]]:
    import openpyxl

    try:
        workbook = openpyxl.load_workbook(path, data_only=True)
    except Exception:  # The streaming read above succeeded; merged cells are a nicety.
        return {}
    try:
        return {ws.title: [str(r) for r in ws.merged_cells.ranges] for ws in workbook.worksheets}
    finally:
        workbook.close()
