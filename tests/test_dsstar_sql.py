"""`dsstar.sql`, the one way scripts query, in every sandbox tier this machine has (strong with
dsstar's own namespaces and with bubblewrap, medium, basic):

- engine duckdb: the query runs in the script's own process, over views named as the prompt names
  the tables (a CSV, a hive-partitioned Parquet dataset), and returns a pandas DataFrame;
- engine spark's path: the query travels over the query channel (descriptor 3, passed like the
  output pipes) to the executor's side, which alone holds the engine. Here the engine is a stand-in
  answering from Arrow tables (the real one needs a JVM: test_spark_engine.py); the script still
  cannot create a socket of its own, in the tiers that refuse them;
- both: statements that are not queries are refused, and past the row cap the call raises instead
  of returning a cut result."""

from __future__ import annotations

import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dsstar_cli.analyzer import analyze_folder
from dsstar_cli.analyzer.limits import AnalyzerLimits
from dsstar_cli.engine.tables import duckdb_setup
from dsstar_cli.sandbox import Executor
from dsstar_cli.sandbox.readonly_sql import to_spark
from dsstar_cli.sandbox.tiers import bubblewrap_works, probe

TIERS = ["strong", "strong-bwrap", "medium", "basic"]
CAPS = {"max_rows": 1000, "max_bytes": 1 << 20}


@pytest.fixture(params=TIERS)
def tier(request) -> dict:
    kind = request.param.split("-")[0]
    if not probe().available.get(kind):
        pytest.skip(f"no {kind} tier on this machine: {probe().details.get(kind)}")
    if request.param == "strong-bwrap":
        works, why = bubblewrap_works()
        if not works:
            pytest.skip(f"bubblewrap does not work here: {why}")
        return {"tier": "strong", "strong_backend": "bubblewrap"}
    return {"tier": kind}


@pytest.fixture
def data(tmp_path):
    root = tmp_path / "data"
    for year in (2023, 2024):
        for month in (1, 2):
            folder = root / "sales" / f"year={year}" / f"month={month}"
            folder.mkdir(parents=True)
            pq.write_table(pa.table({"region": ["n", "s", "n"], "amount": [1.0 * month, 2.0, 3.0 * year]}),
                           folder / "part-0.parquet")
    (root / "people.csv").write_text("name,age\nada,36\nbob,41\n")
    return root


def executor(tmp_path, data, tier) -> Executor:
    return Executor(tmp_path / "run" / "work", data, timeout_s=30, memory_mb=2048, warm=False, **tier)


def run(ex: Executor, code: str):
    execution = ex.run(code, "script")
    assert execution.ok, execution.stderr
    return execution.stdout


def test_duckdb_queries_the_tables_by_name_in_the_sandbox(tmp_path, data, tier):
    files = analyze_folder(data, AnalyzerLimits(3000, 3, 200_000, 1024, 60), lambda event: None, "builtin")
    setup = duckdb_setup(files, str(data), **CAPS)
    assert setup["described"] == {"people": "people.csv (csv)",
                                  "sales": "sales/**/*.parquet (parquet, partitioned by year, month)"}
    ex = executor(tmp_path, data, tier)
    ex.use_engine(setup)
    try:
        out = run(ex, "import dsstar\n"
                      "df = dsstar.sql('SELECT region, SUM(amount) AS s FROM sales WHERE year = 2024 GROUP BY 1 "
                      "ORDER BY 1')\n"
                      "print(type(df).__name__, df.to_dict('records'))\n"
                      "print(dsstar.sql('SELECT MAX(age) AS m FROM people')['m'][0])\n"
                      "for bad in ('DROP VIEW sales', \"COPY sales TO 'x.csv'\", 'SELECT 1; SELECT 2', "
                      "'SELECT * FROM range(5000)'):\n"
                      "    try:\n        dsstar.sql(bad)\n        print('ran:', bad)\n"
                      "    except dsstar.QueryError as exc:\n        print('refused:', str(exc)[:60])\n")
    finally:
        ex.close()
    lines = out.splitlines()
    assert lines[0] == "DataFrame [{'region': 'n', 's': 12147.0}, {'region': 's', 's': 4.0}]"
    assert lines[1] == "41"
    assert [line.split(":")[0] for line in lines[2:]] == ["refused"] * 4
    assert "more than 1,000 rows" in lines[5]
    assert not (tmp_path / "run" / "work" / "x.csv").exists()


class ArrowEngine:
    """Stands in for the Spark session on the executor's side: answers from Arrow tables, and
    records what reached it (the statement, already turned into Spark SQL)."""

    def __init__(self):
        self.seen: list[str] = []
        self.interrupted: list[str] = []
        self.release = threading.Event()

    def query(self, sql: str, tag: str, max_rows: int):
        text = to_spark(sql)
        self.seen.append(text)
        if "slow" in text:
            self.release.clear()
            self.release.wait(20)  # Until interrupted (or the test gives up).
            raise RuntimeError("[OPERATION_CANCELED] Operation has been canceled.")
        return pa.table({"region": ["n", "s"], "total": [3.5, 4.0]}) if "GROUP BY" in text else \
            pa.table({"id": list(range(max_rows + 1))})

    def interrupt(self, tag: str) -> None:
        self.interrupted.append(tag)
        self.release.set()


def test_the_query_channel_reaches_the_engine_and_nothing_else(tmp_path, data, tier):
    engine = ArrowEngine()
    ex = executor(tmp_path, tmp_path / "empty", tier)
    (tmp_path / "empty").mkdir(exist_ok=True)
    ex.use_engine({"kind": "spark", "described": {"sales": "sales"}, **CAPS}, engine)
    try:
        out = run(ex, "import dsstar, socket\n"
                      "df = dsstar.sql(\"SELECT region, SUM(amount)::DOUBLE AS total FROM sales GROUP BY region\")\n"
                      "print(df.to_dict('records'))\n"
                      "for bad in ('DELETE FROM sales', 'SELECT id FROM big'):\n"
                      "    try:\n        dsstar.sql(bad)\n    except dsstar.QueryError as exc:\n"
                      "        print('refused:', str(exc)[:40])\n"
                      "try:\n    socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n    print('socket: made')\n"
                      "except OSError as exc:\n    print('socket:', exc.strerror)\n")
        slow = ex.run("import dsstar\ndsstar.sql('SELECT slow FROM sales')\n", "slow", timeout_s=2)
    finally:
        ex.close()
    lines = out.splitlines()
    assert lines[0] == "[{'region': 'n', 'total': 3.5}, {'region': 's', 'total': 4.0}]"
    assert lines[1].startswith("refused: dsstar.sql runs queries only")  # never sent: refused in the script
    assert lines[2].startswith("refused: dsstar.sql: the result has more ")  # past the cap, never cut
    # What reached the engine is Spark SQL, and only the queries.
    assert engine.seen[:2] == ["SELECT region, CAST(SUM(amount) AS DOUBLE) AS total FROM sales GROUP BY region",
                               "SELECT id FROM big"]
    if tier["tier"] != "basic":  # The confined tiers refuse sockets; the channel still works.
        assert lines[3] == "socket: Operation not permitted"
    # Past its deadline the script is killed and its query interrupted on the engine.
    assert slow.timed_out and slow.seconds < 10 and engine.release.is_set()


@pytest.mark.parametrize("statement", [
    "INSERT INTO sales SELECT * FROM sales", "CREATE TABLE t AS SELECT 1", "DROP TABLE sales",
    "UPDATE sales SET amount = 0", "MERGE INTO a USING b ON a.id = b.id WHEN MATCHED THEN DELETE",
    "SELECT 1; DROP TABLE sales", "SET spark.sql.x = 1", "SELECT reflect('java.lang.System', 'exit', 1)",
    "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", "ATTACH 'other.db'", "COPY sales TO 'out.csv'",
])
def test_only_queries_reach_an_engine(statement):
    from dsstar_cli.sandbox.readonly_sql import QueryRefused

    with pytest.raises(QueryRefused):
        to_spark(statement)


def test_duckdb_sql_becomes_spark_sql():
    assert to_spark("SELECT strftime(d, '%Y-%m') AS m, COUNT(*) FROM t GROUP BY ALL") == \
        "SELECT DATE_FORMAT(d, 'yyyy-MM') AS m, COUNT(*) FROM t GROUP BY ALL"
    assert to_spark("SHOW TABLES") == "SHOW TABLES"
    assert to_spark("FROM sales SELECT region") == "SELECT region FROM sales"


def test_locally_the_prompts_describe_dsstar_sql_only_where_a_file_is_big():
    """An ordinary folder's prompts stay as measured (the coder has pandas and duckdb already); a
    folder holding a big table gets the idiom and the tables' names."""
    from dsstar_cli.analyzer import FileDescription
    from dsstar_cli.engine.note import LOCAL_NOTE_BYTES, local_note

    setup = {"kind": "duckdb", "max_rows": 100_000, "max_bytes": 64 << 20,
             "described": {"sales": "sales.csv (CSV)"}}
    small = [FileDescription("sales.csv", "csv", 10_000, "builtin", "a table")]
    big = [FileDescription("sales.csv", "csv", LOCAL_NOTE_BYTES, "builtin", "a table")]
    assert local_note(setup, small) == ""
    note = local_note(setup, big)
    assert "dsstar.sql" in note and "- sales: sales.csv (CSV)" in note
