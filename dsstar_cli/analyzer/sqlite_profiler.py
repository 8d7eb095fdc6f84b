"""SQLite databases: tables and views, their columns, row counts and a few rows. The database is
opened read-only and immutable, so not even a journal or lock file is written beside it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from dsstar_cli.analyzer.limits import AnalyzerLimits, NoData

MAX_TABLES = 40


def profile_sqlite(path: Path, limits: AnalyzerLimits) -> str:
    uri = f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1"
    try:
        connection = sqlite3.connect(uri, uri=True)
        try:
            return _describe(connection, limits)
        finally:
            connection.close()
    except sqlite3.DatabaseError as exc:
        raise NoData(f"not a readable SQLite database: {exc}") from exc


def _describe(connection: sqlite3.Connection, limits: AnalyzerLimits) -> str:
    objects = connection.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
                                 "AND name NOT LIKE 'sqlite_%' ORDER BY type, name").fetchall()
    parts = [f"SQLite database with {len(objects)} table(s)/view(s). Query with "
             "sqlite3.connect(f'file:{path}?mode=ro', uri=True) and pd.read_sql_query(sql, connection)."]
    for name, kind in objects[:MAX_TABLES]:
        quoted = '"' + name.replace('"', '""') + '"'
        columns = connection.execute(f"PRAGMA table_info({quoted})").fetchall()
        rows = connection.execute(f"SELECT COUNT(*) FROM {quoted}").fetchone()[0]
        column_text = ", ".join(f"{c[1]} {c[2] or 'ANY'}{' PRIMARY KEY' if c[5] else ''}" for c in columns)
        parts.append(f"\n{kind.capitalize()} {name!r}: {rows:,} rows; columns: {column_text}.")
        sample = connection.execute(f"SELECT * FROM {quoted} LIMIT {limits.sample_rows}").fetchall()
        parts.extend(f"  {tuple(row)!r}"[:300] for row in sample)
    if len(objects) > MAX_TABLES:
        parts.append(f"... and {len(objects) - MAX_TABLES} more tables not described.")
    return "\n".join(parts)
