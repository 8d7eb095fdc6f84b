"""How a cancelled CPU-bound Spark query's tasks end, under a given server conf: the measurements
behind docs/big-data.md's "Spark's cancellation is cooperative".

A pyspark Spark Connect server (tests/spark_server.py; `--master local-cluster[1,2,1024]` runs a
separate executor JVM, which the task reaper needs) gets a 2,400-row Parquet table; a client runs
a three-way cross join of it under a tag, interrupts the tag after --wait seconds (what dsstar does
at a script's deadline), then polls the REST API until no task of a failed or active stage is
RUNNING (at most --polls times, 2 s apart) and prints what it saw:

    python benchmarks/spark_cancel_measure.py                       # the row reader: KILLED at once
    python benchmarks/spark_cancel_measure.py --conf spark.sql.parquet.enableVectorizedReader=true
    python benchmarks/spark_cancel_measure.py --master 'local-cluster[1,2,1024]' \\
        --conf spark.sql.parquet.enableVectorizedReader=true --conf spark.task.reaper.enabled=true \\
        --conf spark.task.reaper.killTimeout=10s --wait 30
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import _common  # noqa: F401 - puts tests/ on sys.path (spark_server)

SLOW = "SELECT SUM(HASH(a.amount, b.amount, c.amount)) AS h FROM t AS a CROSS JOIN t AS b CROSS JOIN t AS c"


def task_states(server) -> tuple[list, dict]:
    """(stage id, status) of the active and failed stages; their tasks counted by status."""
    stages = [s for s in server.api("stages") if s["status"] in ("ACTIVE", "FAILED")]
    counted: dict[str, int] = {}
    for stage in stages:
        for task in server.api(f"stages/{stage['stageId']}/{stage['attemptId']}/taskList?length=10000"):
            counted[task["status"]] = counted.get(task["status"], 0) + 1
    return [(s["stageId"], s["status"]) for s in stages], counted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conf", action="append", default=[], help="KEY=VALUE for the server")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--wait", type=float, default=6.0, help="seconds before the interrupt")
    parser.add_argument("--polls", type=int, default=30)
    args = parser.parse_args()
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import SparkSession
    from spark_server import SparkConnectServer

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "t").mkdir()
        pq.write_table(pa.table({"amount": [float(i) for i in range(2400)]}), root / "t" / "part-0.parquet")
        conf = dict(item.split("=", 1) for item in args.conf)
        with SparkConnectServer(root, conf, args.master) as server:
            session = SparkSession.builder.remote(server.remote).create()
            session.read.parquet(str(root / "t")).createOrReplaceTempView("t")

            def run() -> None:
                session.addTag("slow")
                try:
                    session.sql(SLOW).collect()
                except Exception as exc:  # noqa: BLE001 - the cancel's error is the expected end.
                    print(f"the query ended: {type(exc).__name__}")

            thread = threading.Thread(target=run)
            thread.start()
            time.sleep(args.wait)  # Lets the query reach its tasks (a measurement, not a test).
            cancelled = time.monotonic()
            session.interruptTag("slow")
            thread.join()
            print(f"the client returned {time.monotonic() - cancelled:.2f} s after interruptTag")
            for _ in range(args.polls):
                stages, tasks = task_states(server)
                print(f"{time.monotonic() - cancelled:6.1f} s after: stages {stages}, tasks {tasks}", flush=True)
                if tasks and "RUNNING" not in tasks:
                    break
                time.sleep(2)
            session.stop()


if __name__ == "__main__":
    main()
