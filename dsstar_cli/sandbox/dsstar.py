"""What a generated script imports as `dsstar`: one way to query the data, whatever the engine.

    import dsstar
    df = dsstar.sql("SELECT region, SUM(amount) AS total FROM sales GROUP BY region")

`sql` takes one query in DuckDB's dialect (SELECT, WITH, SHOW or DESCRIBE: anything else is
refused, see readonly_sql.py) over the data folder's tables, named as the prompt lists them
(`tables()` too), and returns a pandas DataFrame of at most `max_rows` rows and `max_bytes` of
Arrow data (100,000 rows and 64 MB unless query.max_rows / query.max_mb say otherwise); past
either it raises QueryError, saying to aggregate in SQL: a result is never silently cut.

- engine duckdb: the query runs here, in the script's own process, in DuckDB configured for the
  sandbox (duckdb_setup.py), over views on the data folder's files;
- engine spark: the query travels over the query channel (query_channel.py, descriptor 3) to
  dsstar's own process, which alone holds the Spark Connect session; this process opens nothing.

The worker calls `install` in the script's process before the script's code. Standard library
at import (pyarrow, duckdb and sqlglot are imported on the first query).
"""

import readonly_sql  # noqa: F401 - imported now: a strong tier's root may not hold this folder later.
import query_channel

_setup: dict = {}
_connection = None


class QueryError(RuntimeError):
    """A query that was refused, failed on the engine, or returned more than the caps allow."""


def install(setup: dict | None) -> None:
    """The engine this script's queries go to (set by the sandbox worker, not by scripts)."""
    global _setup
    _setup = dict(setup or {})


def tables() -> dict:
    """The tables `sql` can query: name -> what it holds (a file or a dataset of the data folder)."""
    return dict(_setup.get("described", {}))


def sql(query: str):
    """Run one read-only query; a pandas DataFrame (see the module's docstring for the caps)."""
    if not _setup:
        raise QueryError("dsstar.sql is only available in scripts dsstar runs")
    try:
        readonly_sql.check(query)
    except readonly_sql.QueryRefused as exc:
        raise QueryError(str(exc)) from None
    table = _remote(query) if _setup.get("kind") == "spark" else _local(query)
    return table.to_pandas()


def _caps(table):
    rows, limit = table.num_rows, _setup.get("max_rows", 100_000)
    if rows > limit:
        raise QueryError(f"dsstar.sql: the result has more than {limit:,} rows; aggregate or filter in SQL "
                         "(GROUP BY, WHERE, LIMIT) and bring back only what the answer needs")
    size, most = table.nbytes, _setup.get("max_bytes", 64 << 20)
    if size > most:
        raise QueryError(f"dsstar.sql: the result holds {size:,} bytes, over the {most:,} allowed; select fewer "
                         "columns or rows")
    return table


def _local(query: str):
    """DuckDB, in this process, over views named as the prompt names the tables."""
    global _connection
    import duckdb

    if _connection is None:
        _connection = duckdb.connect()
        for name, select in _setup.get("views", {}).items():
            _connection.execute(f'CREATE OR REPLACE TEMP VIEW "{name}" AS {select}')
    try:
        relation = _connection.sql(query)
        if relation is None:
            raise QueryError("dsstar.sql: the statement returned no result")
        return _caps(relation.limit(_setup.get("max_rows", 100_000) + 1).fetch_arrow_table())
    except duckdb.Error as exc:
        raise QueryError(f"dsstar.sql (DuckDB): {exc}") from None


def _remote(query: str):
    """Spark, through dsstar's process: the request over descriptor 3, the answer as Arrow."""
    import pyarrow as pa

    fd = _setup.get("fd", query_channel.FD)
    try:
        query_channel.write_json(fd, {"sql": query})
        reply = query_channel.read_json(fd, 1 << 20)
        if reply is not None and reply.get("ok"):
            body = query_channel.read_frame(fd, _setup.get("max_bytes", 64 << 20) + (1 << 20))
            if body is not None:
                return pa.ipc.open_stream(body).read_all()
    except OSError as exc:
        raise QueryError(f"dsstar.sql: the query channel to dsstar failed ({exc.strerror or exc})") from None
    if reply is None:
        raise QueryError("dsstar.sql: dsstar closed the query channel (the run is stopping)")
    raise QueryError(reply.get("error") or "dsstar.sql: no answer")
