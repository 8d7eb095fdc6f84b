"""Data too big for pandas in the sandbox: which described files are, and the note that steers the
model to DuckDB (configured for the sandbox: sandbox/duckdb_setup.py). The note goes into the file
descriptions only when such data is there, so small folders pay no prompt tokens for it."""

from __future__ import annotations

from typing import Iterable

from dsstar_cli.analyzer import FileDescription

# pandas holds a CSV in several times its size (a text cell is a Python object of 50+ bytes), and
# scripts run under an address-space cap (sandbox.memory_mb, 4 GB by default).
BIG_BYTES = 200 * 1024 * 1024
SHOWN = 5

NOTE = ("Note: {names} too big to load whole with pandas within the sandbox's memory cap (a pandas "
        "loader below is for a sample only: add nrows=). Query {them} in place with DuckDB (installed and "
        "set up for the sandbox: it spills to disk), one grouped query per question where you can, and "
        "bring only small results into pandas, e.g.\n"
        "import duckdb\n"
        "df = duckdb.sql(f\"SELECT <key column>, COUNT(*) AS n FROM {reader}('{{DATA_DIR}}/{example}') "
        "GROUP BY 1\").df()\n"
        "(a dataset's own loader for a dataset.)")
READERS = {"parquet": "read_parquet", "jsonl": "read_json", "json": "read_json"}


def too_big(files: Iterable[FileDescription]) -> list[FileDescription]:
    """Files and datasets over BIG_BYTES, and every dataset of many files (read them together)."""
    return [f for f in files if f.size_bytes >= BIG_BYTES or f.format.endswith(" dataset")
            and f.size_bytes >= BIG_BYTES // 4]


def note(files: Iterable[FileDescription]) -> str:
    """The steering note ('' when nothing is too big)."""
    big = too_big(files)
    if not big:
        return ""
    names = ", ".join(f.path for f in big[:SHOWN]) + (f" and {len(big) - SHOWN} more" if len(big) > SHOWN else "")
    single = next((f for f in big if not f.format.endswith(" dataset")), big[0])
    return NOTE.format(names=names + (" are" if len(big) > 1 else " is"), them="them" if len(big) > 1 else "it",
                       reader=READERS.get(single.format.split()[0], "read_csv"), example=single.path)
