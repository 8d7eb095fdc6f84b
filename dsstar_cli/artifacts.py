"""What a run leaves for the user besides its answer: the files its scripts wrote (charts, tables,
anything else) and the CSV of a table answer, each with its kind, as the result lists them.

A kind is read from the file's name, never from its content: the listing is cheap and never opens
a file a script left (the PNG check of a figure shown inline lives in display's image module)."""

from __future__ import annotations

from pathlib import PurePath

FIGURE, TABLE, FILE = "figure", "table", "file"
KINDS = (FIGURE, TABLE, FILE)
FIGURE_SUFFIXES = {".png", ".jpg", ".jpeg", ".svg", ".pdf", ".gif", ".webp"}
TABLE_SUFFIXES = {".csv", ".tsv", ".xlsx", ".xls", ".parquet", ".feather"}
ANSWER_CSV = "answer.csv"  # A table answer, in the run folder (beside result.json, out of the scripts' reach).


def kind_of(path: str) -> str:
    suffix = PurePath(path).suffix.lower()
    return FIGURE if suffix in FIGURE_SUFFIXES else TABLE if suffix in TABLE_SUFFIXES else FILE


def listed(paths: list[str]) -> list[dict[str, str]]:
    """`{"path", "kind"}` for each path (relative to the run folder), in the order given."""
    return [{"path": path, "kind": kind_of(path)} for path in paths]


def normalized(artifacts: list) -> list[dict[str, str]]:
    """Artifacts as the result holds them, also from a result.json written before they had kinds
    (a list of paths)."""
    return [item if isinstance(item, dict) else {"path": item, "kind": kind_of(item)} for item in artifacts]
