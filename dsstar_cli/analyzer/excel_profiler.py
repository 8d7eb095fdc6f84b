"""Excel workbooks: every sheet, with its size and columns."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pandas as pd

from dsstar_cli.analyzer.frame import describe_frame
from dsstar_cli.analyzer.limits import AnalyzerLimits, ProfileError

SAMPLE_ROWS = 5_000
MAX_SHEETS = 30


def profile_excel(path: Path, limits: AnalyzerLimits) -> str:
    import openpyxl  # Imported here: only folders with workbooks pay for it.

    try:
        # read_only streams the sheets; data_only gives formulas' cached values, not the formulas.
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
        raise ProfileError(f"not a readable Excel workbook: {exc}") from exc
    try:
        sheets = [(ws.title, ws.max_row, ws.max_column) for ws in workbook.worksheets]
    finally:
        workbook.close()
    parts = [f"Excel workbook with {len(sheets)} sheet(s): {', '.join(repr(s[0]) for s in sheets)}."]
    for title, max_row, max_col in sheets[:MAX_SHEETS]:
        frame = pd.read_excel(path, sheet_name=title, nrows=SAMPLE_ROWS, engine="openpyxl")
        rows = max((max_row or 1) - 1, len(frame))
        sampled = f" (profiled from the first {len(frame):,} rows)" if len(frame) < rows else ""
        parts.append(f"\nSheet {title!r}: {rows:,} data rows. Load with pd.read_excel(path, sheet_name={title!r}).")
        parts.append(describe_frame(frame, limits.sample_rows, sampled) if len(frame.columns) else "(empty sheet)")
    if len(sheets) > MAX_SHEETS:
        parts.append(f"... and {len(sheets) - MAX_SHEETS} more sheets not described.")
    return "\n".join(parts)
