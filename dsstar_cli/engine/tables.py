"""The data folder's tables as `dsstar.sql` names them: one stable name per table file or dataset.

A name comes from the file's or the dataset's folder name (`transactions.csv` -> transactions,
`sales/**/*.parquet` -> sales), lower-cased, anything but letters, digits and _ turned into _, so
the model can write it unquoted; a clash takes the parent folder's name in front, then a number.
The same names are given on both engines: DuckDB views over the files (in the script's process),
Spark temporary views over the locations the cluster reads (spark.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

# A description's format -> DuckDB's reader for it (other formats stay pandas' to read).
DUCKDB_READERS = {"csv": "read_csv", "tsv": "read_csv", "parquet": "read_parquet", "jsonl": "read_json"}
GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Table:
    name: str
    path: str           # relative to the data folder: a file, or a dataset's glob / folder
    format: str         # csv, parquet, ... (of its files)
    partitions: tuple[str, ...] = ()

    def what(self) -> str:
        """What the prompt says it is."""
        parts = f", partitioned by {', '.join(self.partitions)}" if self.partitions else ""
        return f"{self.path} ({self.format}{parts})"


def identifier(text: str) -> str:
    name = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_") or "t"
    return f"t_{name}" if name[0].isdigit() else name


def base_name(path: str) -> tuple[str, str]:
    """(the name-giving part, its parent's) of a file or a dataset's glob (`sales/**/*.parquet`)."""
    parts = [part for part in PurePosixPath(path).parts if not GLOB.search(part)]
    if not GLOB.search(path):
        parts[-1] = PurePosixPath(parts[-1]).stem if "." in parts[-1] else parts[-1]
    return (parts[-1] if parts else "data"), (parts[-2] if len(parts) > 1 else "")


def unique_names(paths: list[str]) -> dict[str, str]:
    """path -> a unique identifier, stable for the same set of paths (they are taken sorted)."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for path in sorted(paths):
        own, parent = base_name(path)
        name = identifier(own)
        if name in taken and parent:
            name = identifier(f"{parent}_{own}")
        base, count = name, 2
        while name in taken:
            name, count = f"{base}_{count}", count + 1
        taken.add(name)
        names[path] = name
    return names


def local_tables(files) -> list[Table]:
    """The tables among the analyzer's descriptions (FileDescription-like: path, format, error)."""
    usable = {}
    for f in files:
        fmt, _, kind = f.format.partition(" ")
        if fmt in DUCKDB_READERS and f.error is None and kind in ("", "dataset"):
            if kind == "dataset" and not GLOB.search(f.path):
                continue  # A dataset whose members no glob names: its loader lists them (pandas).
            usable[f.path] = (fmt, _partitions(f.description) if kind else ())
    names = unique_names(list(usable))
    return [Table(names[path], path, fmt, parts) for path, (fmt, parts) in sorted(usable.items())]


def _partitions(description: str) -> tuple[str, ...]:
    """The hive partition keys a dataset's description names (datasets.py writes them)."""
    found = re.search(r"hive-partitioned by ([^)]+)\)", description)
    return tuple(key.strip() for key in found.group(1).split(",")) if found else ()


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def duckdb_view(table: Table, data_dir: str) -> str:
    """The SELECT a DuckDB view of `table` stands for (absolute paths under `data_dir`)."""
    location = _quoted(f"{data_dir.rstrip('/')}/{table.path}")
    reader = DUCKDB_READERS[table.format]
    options = {"read_csv": ", delim='\\t'" if table.format == "tsv" else "",
               "read_json": ", format='newline_delimited'", "read_parquet": ""}[reader]
    if GLOB.search(table.path):
        options += ", union_by_name=true" + (", hive_partitioning=true" if table.partitions else "")
    return f"SELECT * FROM {reader}({location}{options})"


def duckdb_setup(files, data_dir: str, max_rows: int, max_bytes: int) -> dict:
    """What a script's `dsstar` module gets on DuckDB (sandbox/dsstar.py): its views and caps."""
    tables = local_tables(files)
    return {"kind": "duckdb", "views": {t.name: duckdb_view(t, data_dir) for t in tables},
            "described": {t.name: t.what() for t in tables}, "max_rows": max_rows, "max_bytes": max_bytes}
