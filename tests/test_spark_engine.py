"""engine: spark, end to end: a real Spark Connect server (pyspark's own, `local[2]`, started once
for this module), a hive-partitioned Parquet dataset the cluster reads, and `dsstar ask --engine
spark` with a scripted model behind the fake OpenAI server. The answer is right, the describe
step's row counts are the data's, the scripts reach Spark only through `dsstar.sql` (dsstar's own
process holds the session), a query past the script's deadline is cancelled on the server before
the next script runs, its cores freed; a batch describes the location once, and a second run takes
the descriptions from the cache (no COUNT on the cluster) until a file changes. Skips, saying why,
without Java or pyspark."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from fake_openai import FakeOpenAIServer, role_of
from spark_server import SparkConnectServer, why_not

pytestmark = [pytest.mark.skipif(why_not() is not None, reason=f"no Spark Connect server here: {why_not()}"),
              pytest.mark.xdist_group("spark")]  # One worker runs them all: one server (make test: --dist loadgroup).

REGIONS = ["north", "south", "east", "west"]
QUESTION = "What was the total amount per region in 2024?"
SLOW = ("import dsstar\nprint(dsstar.sql('SELECT SUM(HASH(a.amount, b.amount, c.amount)) AS h "
        "FROM sales AS a CROSS JOIN sales AS b CROSS JOIN sales AS c'))\n")
RIGHT = ("import dsstar\n"
         "totals = dsstar.sql('SELECT region, SUM(amount) AS total FROM sales WHERE year = 2024 GROUP BY region "
         "ORDER BY region')\n"
         "for row in totals.itertuples():\n    print(f'{row.region}: {row.total:.2f}')\n")
RESULT_LINE = re.compile(r"^[a-z]+: \d+\.\d{2}$", re.MULTILINE)
CODE_TIMEOUT_S = 12


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with SparkConnectServer(tmp_path_factory.mktemp("spark")) as running:
        yield running


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """sales/year=Y/month=M/part-0.parquet: 2,400 rows in 6 partitions; the expected answers."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("lake")
    totals, counts = {}, {}
    for year, month in [(2023, 11), (2023, 12), (2024, 1), (2024, 2), (2024, 3), (2025, 1)]:
        rows = 300 + 50 * month
        regions = [REGIONS[(i * 7 + month) % 4] for i in range(rows)]
        amounts = [round((i % 97) * 1.25 + month, 2) for i in range(rows)]
        folder = root / "sales" / f"year={year}" / f"month={month}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"region": regions, "amount": amounts}), folder / "part-0.parquet")
        counts[(year, month)] = rows
        if year == 2024:
            for region, amount in zip(regions, amounts):
                totals[region] = totals.get(region, 0.0) + amount
    return root, {region: round(total, 2) for region, total in totals.items()}, counts


def ask(data: Path, server: SparkConnectServer, tmp_path: Path, respond, *flags: str, asked=(QUESTION, "--json")):
    """`dsstar ask DATA QUESTION --json` (or `asked`: --questions FILE) on Spark; runs in one tmp_path
    share their cache."""
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    (cwd / "dsstar.yaml").write_text(f"spark: {{remote: '{server.remote}'}}\ncode_timeout_s: {CODE_TIMEOUT_S}\n"
                                     f"run_dir: {tmp_path / 'runs'}\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("DSSTAR_")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_DATA_HOME=str(tmp_path / "xdg-data"), NO_COLOR="1",
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    with FakeOpenAIServer(respond) as model:
        proc = subprocess.run([sys.executable, "-m", "dsstar_cli", "ask", str(data), *asked, "--engine", "spark",
                               "--model", "openai/fake", "--api-base", model.base_url, *flags],
                              cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        prompts = [(role_of(r["messages"]), "\n".join(m["content"] for m in r["messages"])) for r in model.requests]
    return proc, prompts


def scripted(scripts: list[str]):
    """Plans the group-by, writes `scripts` in turn (the coder's, then the debugger's), verifies, and
    answers by copying the result lines from the output."""
    left = list(scripts)

    def respond(role: str, messages: list[dict]) -> str:
        if role == "planner":
            return "Sum the amount per region over the 2024 partitions, on the cluster."
        if role in ("coder", "debugger"):
            return f"```python\n{left.pop(0) if len(left) > 1 else left[0]}```"
        if role == "verifier":
            return "Yes"
        if role == "finalizer":
            output = messages[-1]["content"].split("# Its output", 1)[1]
            return "```answer\n" + "\n".join(RESULT_LINE.findall(output)) + "\n```"
        return "Add Step"

    return respond


def when(stamp: str) -> datetime:
    return datetime.strptime(stamp.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")


def test_ask_on_spark_answers_right_and_a_query_past_its_deadline_is_cancelled(server, lake, tmp_path):
    data, expected, counts = lake
    before = {path: path.stat().st_mtime_ns for path in data.rglob("*")}
    proc, prompts = ask(data, server, tmp_path, scripted([SLOW, RIGHT]))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    answer = dict(line.split(": ") for line in RESULT_LINE.findall(result["answer"]))
    assert {region: float(total) for region, total in answer.items()} == expected
    assert result["outcome"] == "verified"

    # The describe step went through the engine, and its row counts are the data's.
    planner = next(text for role, text in prompts if role == "planner")
    assert f"{sum(counts.values()):,} rows in all" in planner
    for (year, month), rows in counts.items():
        assert f"year={year}/month={month} {rows:,}" in planner
    assert "Table `sales` for dsstar.sql" in planner and "dsstar.sql" in planner

    # The first script ran past its deadline: its query was cancelled on the server before the next
    # script's query was submitted, and nothing of it runs on.
    run_dir = Path(result["run_dir"])
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    runs = [e for e in events if e["event"] == "execution"]
    assert runs[0]["timed_out"] and runs[-1]["ok"], runs
    jobs = server.jobs()
    ours = [j for j in jobs if any("dsstar-" in tag for tag in j.get("jobTags", []))]
    cancelled = sorted((j for j in ours if j["status"] == "FAILED"), key=lambda j: when(j["submissionTime"]))
    later = [j for j in ours if j["status"] == "SUCCEEDED" and cancelled
             and when(j["submissionTime"]) > when(cancelled[0]["submissionTime"])]
    assert cancelled and later, [(j["jobId"], j["status"]) for j in ours]
    assert when(cancelled[0]["completionTime"]) <= min(when(j["submissionTime"]) for j in later)
    assert not [j for j in jobs if j["status"] == "RUNNING"]
    # Its tasks were killed, not left to run on (a job marked failed can keep its tasks running: see
    # tasks_of), within seconds of the cancel.
    tasks = tasks_of(server, cancelled[0])
    assert tasks and {t["status"] for t in tasks} == {"KILLED"}, [(t["taskId"], t["status"]) for t in tasks]
    ended = max(when(t["launchTime"]).timestamp() + t.get("duration", 0) / 1000 for t in tasks)
    assert ended - when(cancelled[0]["completionTime"]).timestamp() < 15
    # And the cluster's two cores answer a fresh query at once.
    started = time.monotonic()
    from pyspark.sql import SparkSession

    check = SparkSession.builder.remote(server.remote).create()
    try:
        assert check.read.parquet(str(data / "sales")).count() == sum(counts.values())
    finally:
        check.stop()
    assert time.monotonic() - started < 30

    assert {path: path.stat().st_mtime_ns for path in data.rglob("*")} == before  # nothing written there
    assert not (run_dir / "engine-data").exists() or not any((run_dir / "engine-data").iterdir())


def tasks_of(server: SparkConnectServer, job: dict, wait_s: float = 60.0) -> list[dict]:
    """The tasks of `job`'s stages once none is RUNNING (awaited up to wait_s). A cancelled job is
    marked FAILED at once; each of its tasks stops at its next look at the interrupt flag (KILLED), or
    runs on to its end when it never looks (Spark's vectorized Parquet reader looks once a batch)."""
    deadline = time.monotonic() + wait_s
    while True:
        tasks = [task for stage in job["stageIds"] for attempt in server.api(f"stages/{stage}")
                 for task in server.api(f"stages/{stage}/{attempt['attemptId']}/taskList?length=10000")]
        if not any(t["status"] == "RUNNING" for t in tasks) or time.monotonic() > deadline:
            return tasks
        time.sleep(1)  # Polls the server's REST API: it offers no event to await.


def test_doctor_connects_and_says_the_version(server, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSSTAR_")}
    env.update(DSSTAR_SPARK_REMOTE=server.remote, XDG_CONFIG_HOME=str(tmp_path / "config"))
    proc = subprocess.run([sys.executable, "-m", "dsstar_cli", "doctor", "--engine", "spark", "--model", "openai/x"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    line = next(line for line in proc.stdout.splitlines() if " engine:" in line)
    assert line.startswith("ok") and re.search(r"spark \d+\.\d+\.\d+ at sc://127\.0\.0\.1:\d+: catalog spark_catalog",
                                               line), proc.stdout


def test_a_location_the_cluster_cannot_list_is_one_line_and_exit_6(server, tmp_path):
    proc, _ = ask(tmp_path / "no-such-lake", server, tmp_path, scripted([RIGHT]))
    assert proc.returncode == 6, proc.stderr[-2000:]
    assert "the cluster cannot list it" in json.loads(proc.stdout)["error"]["message"]


def counts_so_far(server: SparkConnectServer) -> set[int]:
    """The server's SQL executions that counted rows (the describe step's COUNT(*) and rows per
    partition: `count(1)` in Spark's plan; the scripts here only sum)."""
    return {e["id"] for e in server.executions() if "count(1)" in e.get("planDescription", "")}


def test_a_batch_describes_once_and_the_next_run_counts_nothing_until_a_file_changes(server, lake, tmp_path):
    source, expected, counts = lake
    data = tmp_path / "lake"
    shutil.copytree(source, data)  # Its own copy: a file of it changes below.
    questions = tmp_path / "questions.txt"
    questions.write_text(f"{QUESTION}\nPer region, what did 2024 total?\n")

    def answers_right(proc) -> list[dict]:
        assert proc.returncode == 0, proc.stderr[-3000:]
        batch = proc.stdout.startswith('{"id"')  # A batch's JSON lines, or one run's --json document.
        records = [json.loads(line) for line in proc.stdout.splitlines()] if batch else [json.loads(proc.stdout)]
        for record in records:
            got = dict(line.split(": ") for line in RESULT_LINE.findall(record["answer"]))
            assert {region: float(total) for region, total in got.items()} == expected
        return records

    before = counts_so_far(server)
    batch, _ = ask(data, server, tmp_path, scripted([RIGHT]), "--workers", "2", asked=("--questions", str(questions)))
    records = answers_right(batch)
    assert len(records) == 2
    for record in records:  # Described before the questions, once: in no question's run.
        assert '"analysis_started"' not in Path(record["run_dir"], "events.jsonl").read_text()
    counted = counts_so_far(server) - before
    assert len(counted) == 2, counted  # One COUNT(*), one rows per partition: once for both questions.

    before = counts_so_far(server)
    again, prompts = ask(data, server, tmp_path, scripted([RIGHT]))
    answers_right(again)
    assert counts_so_far(server) == before  # From the cache: the cluster counted nothing.
    planner = next(text for role, text in prompts if role == "planner")
    assert f"{sum(counts.values()):,} rows in all" in planner

    import pyarrow as pa
    import pyarrow.parquet as pq

    changed = data / "sales" / "year=2025" / "month=1" / "part-0.parquet"
    pq.write_table(pa.table({"region": ["north"] * 7, "amount": [1.0] * 7}), changed)
    before = counts_so_far(server)
    third, prompts = ask(data, server, tmp_path, scripted([RIGHT]))
    answers_right(third)
    assert counts_so_far(server) - before  # The listing changed: described (counted) again.
    planner = next(text for role, text in prompts if role == "planner")
    assert f"{sum(counts.values()) - counts[(2025, 1)] + 7:,} rows in all" in planner
