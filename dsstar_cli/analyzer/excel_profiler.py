"""Excel workbooks: every sheet, with its size, where its real header is, merged cells and columns.
Formulas are read as their cached values (what a person sees), not as formula text."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import pandas as pd

from dsstar_cli.analyzer.csv_profiler import find_header_row
from dsstar_cli.analyzer.frame import describe_frame
from dsstar_cli.analyzer.limits import AnalyzerLimits, ProfileError

SAMPLE_ROWS = 5_000
MAX_SHEETS = 30
LAYOUT_ROWS = 30
MERGED_UP_TO_BYTES = 10 * 1024 * 1024  # Merged ranges need a full (non-streaming) load: small files only.

# openpyxl warns about workbook features it drops (extensions, data validation): noise for us.
warnings.filterwarnings("ignore", category=UserWarning, module="openpyxl")


def profile_excel(path: Path, limits: AnalyzerLimits) -> str:
    import openpyxl  # Imported here: only folders with workbooks pay for it.

    try:
        # read_only streams the sheets; data_only gives formulas' cached values, not the formulas.
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, TypeError) as exc:
        raise ProfileError(f"not a readable Excel workbook: {exc}") from exc
    try:
        sheets = [(ws.title, ws.max_row or 0, ws.max_column or 0) for ws in workbook.worksheets]
    finally:
        workbook.close()
    merged = _merged_ranges(path) if path.stat().st_size <= MERGED_UP_TO_BYTES else {}
    listing = ", ".join(f"{title!r} ({rows:,} rows x {cols:,} columns)" for title, rows, cols in sheets)
    parts = [f"Excel workbook with {len(sheets)} sheet(s): {listing}."]
    for title, max_row, _ in sheets[:MAX_SHEETS]:
        parts.append("")
        parts.extend(_describe_sheet(path, title, max_row, merged.get(title, []), limits))
    if len(sheets) > MAX_SHEETS:
        parts.append(f"... and {len(sheets) - MAX_SHEETS} more sheets not described.")
    return "\n".join(parts)


def _describe_sheet(path: Path, title: str, max_row: int, merged: list[str], limits: AnalyzerLimits) -> list[str]:
    top = pd.read_excel(path, sheet_name=title, header=None, nrows=LAYOUT_ROWS, engine="openpyxl")
    if top.empty:
        return [f"Sheet {title!r}: empty."]
    header = find_header_row([int(top.iloc[i].notna().sum()) for i in range(len(top))])
    frame = pd.read_excel(path, sheet_name=title, skiprows=header or None, nrows=SAMPLE_ROWS, engine="openpyxl")
    rows = max(max_row - 1 - header, len(frame))
    loader = f"pd.read_excel(path, sheet_name={title!r}" + (f", skiprows={header})" if header else ")")
    lines = [f"Sheet {title!r}: {rows:,} data rows. Load with {loader}."]
    if header:
        titles = [" ".join(str(v) for v in top.iloc[i].dropna()) for i in range(header)]
        lines.append(f"The real header is on row {header + 1}; above it: "
                     + " / ".join(repr(t[:100]) for t in titles if t)[:300] + ".")
    if merged:
        lines.append(f"Merged cells ({len(merged)}): {', '.join(merged[:10])}" + (" ..." if len(merged) > 10 else "")
                     + " (pandas fills only the first cell of each).")
    sampled = f" (profiled from the first {len(frame):,} rows)" if len(frame) < rows else ""
    lines.append(describe_frame(frame, limits.sample_rows, sampled) if len(frame.columns) else "(no columns)")
    return lines


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
