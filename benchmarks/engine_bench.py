"""One question, "total amount per region in 2024?", over one hive-partitioned Parquet dataset, four
ways, each timed on a warm engine (median of RUNS after one untimed run; each engine's two ways
alternate run by run, so a change in the machine's load falls on both alike):

- DuckDB directly (in this process, `duckdb.sql` over the files);
- Spark directly (a Spark Connect client of a local `local[2]` server, over a temporary view),
  collected the way dsstar collects: `limit(max_rows + 1).toArrow()`, then `to_pandas()`, as the
  script's `dsstar.sql` does (not `toPandas()`, the client's own conversion);
- `dsstar.sql` on DuckDB: a script in the sandbox (auto tier, warm worker) querying the same
  view through dsstar's idiom, timed as the executor runs it (the script's start included);
- `dsstar.sql` on Spark: the same script, its query travelling over the query channel to this
  process's Spark Connect session.

The ratios say what dsstar's idiom costs on each engine: the script's start, the sandbox, the
read-only check and (Spark) the channel and the transpiling. The Spark server is pyspark's own,
started here (tests/spark_server.py) and stopped after; without Java or pyspark that half is
skipped, saying why. DSSTAR_ENGINE_BENCH_ROWS sets the rows (default 5,000,000).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401 - puts tests/ on sys.path (spark_server)

ROWS = int(os.environ.get("DSSTAR_ENGINE_BENCH_ROWS", "5000000"))
RUNS = 5
REGIONS = ["north", "south", "east", "west", "centre"]
QUERY = "SELECT region, SUM(amount) AS total FROM sales WHERE year = 2024 GROUP BY region ORDER BY region"
SCRIPT = f"import dsstar\nprint(dsstar.sql({QUERY!r}).to_string())\n"


def make_dataset(root: Path) -> Path:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(7)
    per = ROWS // 12
    for year in (2023, 2024, 2025):
        for quarter in (1, 2, 3, 4):
            folder = root / "sales" / f"year={year}" / f"quarter={quarter}"
            folder.mkdir(parents=True)
            table = pa.table({"region": np.array(REGIONS)[rng.integers(0, 5, per)],
                              "amount": rng.gamma(2.0, 40.0, per).round(2)})
            pq.write_table(table, folder / "part-0.parquet")
    return root / "sales"


MAX_ROWS = 100_000  # query.max_rows' default: what dsstar's query asks the cluster for, plus one.


def medians_s(direct, through) -> tuple[float, float]:
    """The median seconds of `direct` and of `through`, each warmed by one untimed run, then timed
    RUNS times alternately (direct, through, direct, ...)."""
    direct()
    through()
    times: dict = {direct: [], through: []}
    for _ in range(RUNS):
        for action in (direct, through):
            started = time.perf_counter()
            action()
            times[action].append(time.perf_counter() - started)
    return statistics.median(times[direct]), statistics.median(times[through])


def duckdb_view(sales: Path) -> str:
    return f"SELECT * FROM read_parquet('{sales}/**/*.parquet', hive_partitioning=true)"


def run_script(executor) -> None:
    execution = executor.run(SCRIPT, "bench")
    if not execution.ok:
        raise SystemExit(f"the script failed: {execution.stderr[-2000:]}")


def bench_duckdb(sales: Path, work: Path) -> dict[str, float]:
    import duckdb

    from dsstar_cli.sandbox import Executor

    con = duckdb.connect()
    con.execute(f"CREATE VIEW sales AS {duckdb_view(sales)}")
    executor = Executor(work / "duck" / "work", sales.parent, timeout_s=300)
    executor.use_engine({"kind": "duckdb", "views": {"sales": duckdb_view(sales)}, "described": {"sales": "sales"},
                         "max_rows": MAX_ROWS, "max_bytes": 64 << 20})
    try:
        direct, through = medians_s(lambda: con.sql(QUERY).df(), lambda: run_script(executor))
    finally:
        executor.close()
    return {"direct": direct, "dsstar": through, "tier": executor.tier}


def bench_spark(sales: Path, work: Path) -> dict[str, float] | str:
    from spark_server import SparkConnectServer, why_not

    if why_not():
        return why_not()
    from dsstar_cli.engine import EngineSettings
    from dsstar_cli.engine.spark import SparkEngine
    from dsstar_cli.sandbox import Executor

    (work / "spark").mkdir()
    with SparkConnectServer(work / "spark") as server:
        engine = SparkEngine.connect(EngineSettings("spark", server.remote))
        try:
            engine.register("sales", str(sales), "parquet")
            (work / "empty").mkdir()
            executor = Executor(work / "spark-run" / "work", work / "empty", timeout_s=300)
            executor.use_engine({"kind": "spark", "described": {"sales": "sales"}, "max_rows": MAX_ROWS,
                                 "max_bytes": 64 << 20}, engine)
            try:
                direct, through = medians_s(
                    lambda: engine.session.sql(QUERY).limit(MAX_ROWS + 1).toArrow().to_pandas(),
                    lambda: run_script(executor))
            finally:
                executor.close()
            return {"direct": direct, "dsstar": through, "version": engine.version}
        finally:
            engine.close()


def load() -> str:
    """The 1, 5 and 15-minute load averages (uptime's): the figures mean little on a busy machine."""
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get("DSSTAR_BENCH_TMP")) as folder:
        work = Path(folder)
        sales = make_dataset(work / "lake")
        size = sum(f.stat().st_size for f in sales.rglob("*.parquet"))
        print(f"engine_bench: {ROWS:,} rows in 12 hive partitions ({size / 1e6:.0f} MB of Parquet); "
              f"median of {RUNS} warm runs; query: {QUERY}; load average {load()}")
        duck = bench_duckdb(sales, work)
        spark = bench_spark(sales, work)
    print(f"load average at the end: {load()}")
    print(f"{'engine':<28}{'directly':>10}{'dsstar.sql':>12}{'ratio':>8}")
    print(f"{'duckdb (tier ' + duck['tier'] + ')':<28}{duck['direct']:>9.3f}s{duck['dsstar']:>11.3f}s"
          f"{duck['dsstar'] / duck['direct']:>7.2f}x")
    if isinstance(spark, str):
        print(f"spark: skipped ({spark})")
    else:
        print(f"{'spark ' + spark['version'] + ' local[2]':<28}{spark['direct']:>9.3f}s{spark['dsstar']:>11.3f}s"
              f"{spark['dsstar'] / spark['direct']:>7.2f}x")


if __name__ == "__main__":
    sys.exit(main())
