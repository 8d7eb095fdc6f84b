"""Which statements `dsstar.sql(...)` runs: queries only, whatever the engine.

A statement is parsed with sqlglot (a maintained SQL parser and transpiler) in DuckDB's dialect,
the one the model is told to write, and run only when it is exactly one SELECT (a WITH, a UNION,
DuckDB's `FROM t SELECT ...` included), SHOW or DESCRIBE. Anything else (writes, DDL, COPY, SET,
ATTACH, PRAGMA, EXPLAIN ANALYZE, several statements) is refused before it reaches an engine, as
are functions that reach outside a query (Spark's reflect/java_method call Java methods). On Spark
the same statement is then turned into Spark SQL (`to_spark`).

This is dsstar's promise not to write; a read-only role on the catalog is the cluster's (README).
Self-contained (sqlglot and the standard library): the sandbox worker imports it by path.
"""

READ_DIALECT = "duckdb"
# Functions that run code or touch the outside world from inside a SELECT.
REFUSED_FUNCTIONS = {"reflect", "java_method", "try_reflect", "read_text", "read_blob", "getenv", "shell"}


class QueryRefused(ValueError):
    """The statement is not a query dsstar runs; the message says why, for the script's traceback."""


def _parse(sql: str):
    import logging

    import sqlglot

    logging.getLogger("sqlglot").setLevel(logging.ERROR)  # Its warnings would land in the script's stderr.
    from sqlglot.errors import ParseError

    try:
        statements = [s for s in sqlglot.parse(sql, read=READ_DIALECT) if s is not None]
    except ParseError as exc:
        raise QueryRefused(f"dsstar.sql could not parse this statement: {str(exc).splitlines()[0][:300]}") from exc
    if len(statements) != 1:
        raise QueryRefused(f"dsstar.sql runs exactly one statement, not {len(statements)}")
    return statements[0]


def check(sql: str):
    """The parsed statement when it is a query dsstar runs; QueryRefused (saying why) otherwise."""
    from sqlglot import exp

    if not isinstance(sql, str) or not sql.strip():
        raise QueryRefused("dsstar.sql needs a non-empty SQL string")
    statement = _parse(sql)
    allowed = (exp.Query, exp.Show, exp.Describe)  # Query: SELECT, UNION/INTERSECT/EXCEPT, WITH ... SELECT.
    if not isinstance(statement, allowed):
        kind = statement.key.upper() if not isinstance(statement, exp.Command) else str(statement.this).upper()
        raise QueryRefused(f"dsstar.sql runs queries only (SELECT, WITH, SHOW, DESCRIBE), not {kind}: the data is "
                           "read-only")
    for node in statement.walk():
        if isinstance(node, (exp.Insert, exp.Create, exp.Drop, exp.Delete, exp.Update, exp.Merge, exp.Alter,
                             exp.Copy, exp.Set, exp.Command, exp.Pragma)):
            raise QueryRefused(f"dsstar.sql runs queries only: {node.key.upper()} inside a query is refused")
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if name in REFUSED_FUNCTIONS:
                raise QueryRefused(f"dsstar.sql refuses {name}(): it reaches outside the query")
    return statement


def to_spark(sql: str) -> str:
    """`sql`, checked, in Spark SQL (DuckDB's dialect turned into Spark's by sqlglot). SHOW and DESCRIBE
    go as written: they read the catalog alone, and sqlglot does not write every form of them."""
    from sqlglot import exp

    statement = check(sql)
    if isinstance(statement, (exp.Show, exp.Describe)):
        return sql.strip().rstrip(";").strip()
    return statement.sql(dialect="spark")
