"""Describe DATA_DIR through the query engine (engine: spark): nothing is copied to this machine.

DATA_DIR is a location the cluster reads (s3a://..., hdfs://..., a shared path). The engine lists
its files; each top-level entry is one table (a folder: a dataset, its hive `key=value` folders
becoming partition columns; a file: a table of its own) or, for a small text document, its text.
Each table is registered as a temporary view under its stable name (engine/tables.py) and
described by queries on the cluster: its schema, its row count (COUNT(*): Parquet answers it from
the files' metadata, no data read), rows per partition (at most SHOWN_PARTITIONS), a bounded
sample. The description has the shape the model gets for local files, with the table's name and
the way to query it.

Descriptions are cached across runs like local ones, keyed on the cluster's listing of each entry
(paths, sizes, modification times: analyzer/cache.py `listing_key`) with the cluster's address and
the location: a second run lists again (one small job) but counts nothing, and only registers the
views. A batch describes once; each question's session then registers the tables (`register_tables`).
"""

from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from typing import NamedTuple

from dsstar_cli.analyzer import FileDescription, _human_size
from dsstar_cli.analyzer.cache import DescriptionCache
from dsstar_cli.analyzer.text_profiler import IN_FULL
from dsstar_cli.engine.tables import identifier, unique_names
from dsstar_cli.errors import DataFolderError
from dsstar_cli.events import Event, Sink

TABLE_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".json": "jsonl",
                 ".jsonl": "jsonl", ".ndjson": "jsonl", ".orc": "orc"}
TEXT_FORMATS = {".md": "markdown", ".txt": "text", ".rst": "text"}
PARTITION = re.compile(r"^([^=/]+)=([^/]*)$")
SHOWN_PARTITIONS = 30
SHOWN_VALUES = 10
TABLE_NAME = re.compile(r"Table `([^`]+)`")


class Listed(NamedTuple):
    """One file as the cluster lists it: its path below the location, size, modification time (µs)."""
    path: str
    size: int
    modified: int


def _relative(path: str, root: str) -> str:
    """`path` (as the engine lists it: file:/x/y, s3a://b/x/y) below `root`."""
    for prefix in (root.rstrip("/") + "/", "file:" + root.rstrip("/") + "/", "file://" + root.rstrip("/") + "/"):
        if path.startswith(prefix):
            return path[len(prefix):]
    marker = root.rstrip("/").split("://", 1)[-1] + "/"
    return path.split(marker, 1)[1] if marker in path else path.rsplit("/", 1)[-1]


def group_listing(listing: list[tuple[str, int, int]], root: str) -> dict[str, list[Listed]]:
    """Top-level entry below `root` -> its files (relative path, size, modification time)."""
    groups: dict[str, list[Listed]] = defaultdict(list)
    for path, size, modified in listing:
        relative = _relative(path, root)
        groups[relative.split("/", 1)[0]].append(Listed(relative, size, modified))
    return dict(sorted(groups.items()))


def _format_of(files: list[Listed]) -> str | None:
    kinds = Counter(TABLE_FORMATS.get("." + f.path.rsplit(".", 1)[-1].lower()) for f in files if "." in f.path)
    kinds.pop(None, None)
    return kinds.most_common(1)[0][0] if kinds else None


def _partitions(files: list[Listed]) -> dict[str, list[str]]:
    """Hive keys (outermost first) -> their values, from the folders of the files' paths."""
    found: dict[str, set[str]] = {}
    for f in files:
        for part in f.path.split("/")[1:-1]:
            match = PARTITION.match(part)
            if match:
                found.setdefault(match.group(1), set()).add(match.group(2))
    return {key: sorted(values) for key, values in found.items()}


def _sample_text(table) -> str:
    frame = table.to_pandas()
    return frame.to_string(index=False, max_colwidth=40) if len(frame) else "(no rows)"


def describe_table(engine, name: str, entry: str, files: list[Listed], fmt: str, location: str,
                   sample_rows: int) -> FileDescription:
    """One table, registered as `name` and described through the engine."""
    size = sum(f.size for f in files)
    engine.register(name, f"{location.rstrip('/')}/{entry}", fmt)
    columns = engine.sql_arrow(f"DESCRIBE {name}").to_pylist()
    columns = [(c["col_name"], c["data_type"]) for c in columns if c["col_name"] and not c["col_name"].startswith("#")]
    columns = list(dict.fromkeys(columns))  # DESCRIBE repeats partition columns under "# Partition Information".
    rows = engine.sql_arrow(f"SELECT COUNT(*) AS n FROM {name}").column("n")[0].as_py()
    partitions = _partitions(files) if len(files) > 1 or "/" in files[0].path else {}
    kind = f"{fmt} dataset" if len(files) > 1 else fmt
    where = f"{len(files):,} {fmt} files under DATA_DIR/{entry}/" if len(files) > 1 else f"DATA_DIR/{entry}"
    lines = [f"Table `{name}` for dsstar.sql (on the Spark cluster): {where}, {_human_size(size)} in all; "
             f"{rows:,} rows in all (COUNT(*) on the cluster{'; from the Parquet metadata' if fmt == 'parquet' else ''})."]
    if partitions:
        said = "; ".join(f"{key} ({len(values)} values: {', '.join(values[:SHOWN_VALUES])}"
                         f"{', ...' if len(values) > SHOWN_VALUES else ''})" for key, values in partitions.items())
        lines.append(f"Partition columns (from the folder names, hive-partitioned): {said}. Filter on them in WHERE: "
                     "the cluster then reads only those folders.")
        keys = ", ".join(identifier(key) if identifier(key) == key else f"`{key}`" for key in partitions)
        counts = engine.sql_arrow(f"SELECT {keys}, COUNT(*) AS n FROM {name} GROUP BY {keys} ORDER BY {keys} "
                                  f"LIMIT {SHOWN_PARTITIONS + 1}").to_pylist()
        shown = ", ".join("/".join(f"{k}={row[k]}" for k in partitions) + f" {row['n']:,}"
                          for row in counts[:SHOWN_PARTITIONS])
        lines.append(f"Rows per partition: {shown}{' ...' if len(counts) > SHOWN_PARTITIONS else ''}.")
    lines.append(f"{len(columns)} columns: " + ", ".join(f"{c}: {t}" for c, t in columns) + ".")
    if sample_rows:
        lines.append(f"First {sample_rows} rows:\n" + _sample_text(engine.sql_arrow(
            f"SELECT * FROM {name} LIMIT {sample_rows}")))
    lines.append(f'Query it: dsstar.sql("SELECT ... FROM {name} ...")')
    return FileDescription(entry, kind, size, "engine", "\n".join(lines))


def describe_document(engine, entry: str, size: int, fmt: str, location: str, max_bytes: int) -> FileDescription:
    """A small text document (the rules), its whole text read through the engine."""
    if size > max_bytes:
        return FileDescription(entry, fmt, size, "metadata", f"A {fmt} document of {_human_size(size)}: over "
                               f"analyzer.max_text_bytes, not read.")
    text = engine.read_text(f"{location.rstrip('/')}/{entry}", max_bytes)
    return FileDescription(entry, fmt, size, "engine", f"Text document, {text.count(chr(10)) + 1} lines, {size:,} "
                           f"bytes, {IN_FULL}\n{text}")


def describe_location(engine, location: str, sample_rows: int, max_text_bytes: int, emit: Sink,
                      cache: DescriptionCache | None = None) -> list[FileDescription]:
    """Every top-level entry of `location`, described through the engine or taken from `cache`
    (emitting as the local analyzer does); the tables are registered as views named as their
    descriptions say."""
    started = time.monotonic()
    try:
        listing = engine.list_files(location)
    except Exception as exc:  # noqa: BLE001 - the engine's reason, in one line.
        raise DataFolderError(f"DATA_DIR {location}: the cluster cannot list it: {engine.error_text(exc)}") from None
    if not listing:
        raise DataFolderError(f"DATA_DIR {location}: the cluster lists no file there")
    groups = group_listing(listing, location)
    emit(Event("analysis_started", {"files": len(groups)}))
    tables = {entry: _format_of(files) for entry, files in groups.items()}
    names = unique_names([entry for entry, fmt in tables.items() if fmt])
    shaped = f"{engine.settings.address()}|{location}|rows={sample_rows}|text={max_text_bytes}"
    results = []
    for done, (entry, files) in enumerate(groups.items(), 1):
        fmt, name = tables[entry], names.get(entry)
        key = cache.listing_key(f"{shaped}|{entry}|{name}|{fmt}", files) if cache else None
        hit = cache.get(key) if key else None
        if hit:
            result = FileDescription(**{**hit, "cached": True})
            _register(engine, name, f"{location.rstrip('/')}/{entry}", fmt)
        else:
            result = describe_entry(engine, entry, files, fmt, name, location, sample_rows, max_text_bytes)
            if key and result.error is None:  # A failure may pass (a permission, the cluster busy): not kept.
                cache.put(key, result.as_dict())
        results.append(result)
        emit(Event("file_described", {"path": result.path, "format": result.format, "method": result.method,
                                      "chars": len(result.description), "error": result.error,
                                      "cached": result.cached, "done": done, "files": len(groups)}))
    emit(Event("analysis_done", {"files": len(results), "cached": sum(r.cached for r in results),
                                 "seconds": round(time.monotonic() - started, 3)}))
    return results


def describe_entry(engine, entry: str, files: list[Listed], fmt: str | None, name: str | None, location: str,
                   sample_rows: int, max_text_bytes: int) -> FileDescription:
    """One top-level entry: a table (registered as `name`), a document read whole, or listed only."""
    suffix = "." + entry.rsplit(".", 1)[-1].lower() if "." in entry else ""
    try:
        if fmt:
            return describe_table(engine, name, entry, files, fmt, location, sample_rows)
        if len(files) == 1 and suffix in TEXT_FORMATS:
            return describe_document(engine, entry, files[0].size, TEXT_FORMATS[suffix], location, max_text_bytes)
        return FileDescription(entry, "other", sum(f.size for f in files), "metadata",
                               f"{len(files)} file(s) in no table format the engine reads here: listed only.")
    except Exception as exc:  # noqa: BLE001 - one unreadable dataset must not end the run.
        why = engine.error_text(exc)
        return FileDescription(entry, fmt or "other", sum(f.size for f in files), "metadata",
                               f"Could not be described through the engine: {why}", why)


def _register(engine, name: str | None, location: str, fmt: str | None) -> None:
    """A described table's view in this session. Best effort: a table gone since it was described
    fails the script's query with the cluster's message, which the debugger reads."""
    if not (name and fmt):
        return
    try:
        engine.register(name, location, fmt)
    except Exception:  # noqa: BLE001 - said by the query that needs it.
        pass


def register_tables(engine, location: str, results: list[FileDescription]) -> None:
    """The views of descriptions made in another session (a batch's, described once for all its
    questions): each question's own session registers them, and counts nothing."""
    for result in results:
        found = TABLE_NAME.match(result.description)
        if found:
            _register(engine, found.group(1), f"{location.rstrip('/')}/{result.path}", result.format.split(" ")[0])


def spark_setup(results: list[FileDescription], max_rows: int, max_bytes: int) -> dict:
    """What a script's `dsstar` module gets on Spark: the tables' names (the views live in dsstar's session)."""
    described = {}
    for result in results:
        found = TABLE_NAME.match(result.description)
        if found:
            described[found.group(1)] = f"{result.path} ({result.format})"
    return {"kind": "spark", "described": described, "max_rows": max_rows, "max_bytes": max_bytes}
