"""Which profiler describes which file: by name suffix, else by the first bytes (a data format
recognised by its magic bytes, other binary kinds, else readable text).

Profilers are imported on first use, so a run whose descriptions all come from the cache never
pays for pandas, openpyxl or pyarrow."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Callable

from dsstar_cli.analyzer.binary_profiler import sniff
from dsstar_cli.analyzer.code_profiler import LANGUAGES, is_text, language_of
from dsstar_cli.analyzer.limits import AnalyzerLimits

Profiler = Callable[[Path, AnalyzerLimits], str]
COMPRESSED = ("gzip", "bzip2", "xz", "zip")


def _lazy(reference: str) -> Profiler:
    module, name = reference.split(":")

    def profile(path: Path, limits: AnalyzerLimits) -> str:
        return getattr(importlib.import_module(f"dsstar_cli.analyzer.{module}"), name)(path, limits)

    profile.__qualname__ = reference
    return profile


_CSV, _JSON, _JSONL = _lazy("csv_profiler:profile_csv"), _lazy("json_profiler:profile_json"), _lazy(
    "json_profiler:profile_jsonl")
_EXCEL, _TEXT, _HTML = _lazy("excel_profiler:profile_excel"), _lazy("text_profiler:profile_text"), _lazy(
    "html_profiler:profile_html")
_PARQUET, _FEATHER = _lazy("arrow_profiler:profile_parquet"), _lazy("arrow_profiler:profile_feather")
_SQLITE, _BINARY = _lazy("sqlite_profiler:profile_sqlite"), _lazy("binary_profiler:profile_binary")
_COMPRESSED, _ZIP = _lazy("compressed_profiler:profile_compressed"), _lazy("compressed_profiler:profile_zip")
_CODE, _PLAIN = _lazy("code_profiler:profile_code"), _lazy("code_profiler:profile_plain")

# suffix -> (format name, profiler)
PROFILERS: dict[str, tuple[str, Profiler]] = {
    ".csv": ("csv", _CSV), ".tsv": ("tsv", _CSV), ".tab": ("tsv", _CSV), ".psv": ("csv", _CSV),
    ".json": ("json", _JSON), ".jsonl": ("jsonl", _JSONL), ".ndjson": ("jsonl", _JSONL),
    ".xlsx": ("excel", _EXCEL), ".xlsm": ("excel", _EXCEL),
    ".md": ("markdown", _TEXT), ".markdown": ("markdown", _TEXT), ".txt": ("text", _TEXT), ".rst": ("text", _TEXT),
    ".html": ("html", _HTML), ".htm": ("html", _HTML),
    ".parquet": ("parquet", _PARQUET), ".pq": ("parquet", _PARQUET),
    ".feather": ("feather", _FEATHER), ".arrow": ("feather", _FEATHER),
    ".sqlite": ("sqlite", _SQLITE), ".sqlite3": ("sqlite", _SQLITE), ".db": ("sqlite", _SQLITE),
    ".gz": ("gzip", _COMPRESSED), ".bz2": ("bzip2", _COMPRESSED), ".xz": ("xz", _COMPRESSED), ".zip": ("zip", _ZIP),
    **{suffix: ("binary", _BINARY) for suffix in (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp",
                                                  ".pdf", ".xls", ".doc", ".ppt", ".npy")},
    **{suffix: ("code", _CODE) for suffix in LANGUAGES},
}

# Formats recognised from the first bytes when the name says nothing (`data.bin`, `store`).
BY_CONTENT = {"sqlite": ("sqlite", _SQLITE), "parquet": ("parquet", _PARQUET), "feather": ("feather", _FEATHER)}


def format_of_name(name: str) -> str:
    return PROFILERS.get(os.path.splitext(name)[1].lower(), ("unknown",))[0]


def profiler_for(path: Path) -> tuple[str, Profiler | None]:
    """(format, profiler or None): by suffix, else by content; None means no built-in profiler."""
    known = PROFILERS.get(path.suffix.lower())
    if known:
        return known
    with path.open("rb") as handle:
        head = handle.read(4096)
    kind = sniff(head)
    if kind in BY_CONTENT:
        return BY_CONTENT[kind]
    if kind:  # Recognised media and containers: type and size.
        return "binary", _BINARY
    if is_text(head):  # A `#!` script, or text of no known format (`.dat`, `.log`): shown as it is.
        return ("code", _CODE) if language_of(path, head) else ("plain", _PLAIN)
    return "unknown", None  # Unrecognised binary data: the model's turn.
