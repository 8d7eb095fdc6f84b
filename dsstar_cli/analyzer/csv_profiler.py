"""CSV/TSV and other delimited text: delimiter, encoding, row count, columns."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from dsstar_cli.analyzer.frame import describe_frame
from dsstar_cli.analyzer.limits import AnalyzerLimits, ProfileError

ENCODINGS = ("utf-8-sig", "cp1252", "latin-1")  # latin-1 decodes any bytes, so it ends the chain.
SNIFF_BYTES = 64 * 1024
EXACT_COUNT_UP_TO = 256 * 1024 * 1024  # Larger files get an estimated row count.
SAMPLE_ROWS = 20_000


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


def count_lines(path: Path, size: int) -> tuple[int, bool]:
    """(lines, exact). Counts every newline up to a size, then extrapolates from the head."""
    with path.open("rb") as handle:
        if size <= EXACT_COUNT_UP_TO:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b"")), True
        head = handle.read(8 << 20)
    return int(head.count(b"\n") * size / max(len(head), 1)), False


def profile_csv(path: Path, limits: AnalyzerLimits) -> str:
    size = path.stat().st_size
    if size == 0:
        raise ProfileError("the file is empty")
    with path.open("rb") as handle:
        head = handle.read(SNIFF_BYTES)
    if b"\x00" in head:
        raise ProfileError("the file holds binary data (NUL bytes), not delimited text")
    encoding = detect_encoding(head)
    delimiter = sniff_delimiter(head.decode(encoding, errors="replace"), path.suffix.lower())
    try:
        frame = pd.read_csv(path, sep=delimiter, encoding=encoding, nrows=SAMPLE_ROWS, low_memory=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise ProfileError(f"pandas cannot parse it as delimited text: {str(exc).splitlines()[0]}") from exc
    lines, exact = count_lines(path, size)
    rows = max(lines - 1, len(frame))
    rows_text = f"{rows:,} data rows" if exact else f"about {rows:,} data rows (estimated from the first 8 MB)"
    sampled = f" (profiled from the first {len(frame):,} rows)" if len(frame) < rows else ""
    loader = f"pd.read_csv(path, sep={delimiter!r}" + ("" if encoding == "utf-8-sig" else f", encoding={encoding!r}") + ")"
    header = f"Delimited text, separator {delimiter!r}, encoding {encoding}; {rows_text}. Load with {loader}."
    return header + "\n" + describe_frame(frame, limits.sample_rows, sampled)
