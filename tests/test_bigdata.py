"""Data bigger than memory, end to end: a real `dsstar ask` (a scripted model behind a local
OpenAI-compatible server) over a generated CSV larger than half the sandbox's memory cap, and over
a hive-partitioned Parquet folder. The question is answered right with the cap in force, the
prompts steer the model to DuckDB, and no process (dsstar, its analyzer children, the sandbox
worker, the script) peaks at 1 GB.

The CSV is DSSTAR_BIGDATA_GB gigabytes (default 1, so the suite stays within minutes; the
benchmark, benchmarks/bigdata_bench.py, carries the 2 GB and 10 GB figures). Files are made in
the test's tmp folder and deleted after."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from bigdata_scenario import GUIDELINES, QUESTION, make_csv, make_hive_parquet, measured, responder, script_peak_mb
from fake_openai import FakeOpenAIServer, role_of

SIZE_GB = float(os.environ.get("DSSTAR_BIGDATA_GB", "0.5"))
MEMORY_MB = 1024          # The sandbox's cap for these runs: the CSV is half of it, or more.
PEAK_LIMIT_MB = 1024


def ask(data: Path, source: str, tmp_path: Path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "dsstar.yaml").write_text(f"sandbox: {{memory_mb: {MEMORY_MB}}}\ncode_timeout_s: 600\n"
                                     f"run_dir: {tmp_path / 'runs'}\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "DSSTAR_MODEL"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_DATA_HOME=str(tmp_path / "xdg-data"), NO_COLOR="1",
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    with FakeOpenAIServer(responder(source)) as server:
        run = measured([sys.executable, "-m", "dsstar_cli", "ask", str(data), QUESTION, "--guidelines", GUIDELINES,
                        "--json", "--model", "openai/fake", "--api-base", server.base_url],
                       cwd, env, timeout=900)
        prompts = {role_of(r["messages"]): "\n".join(m["content"] for m in r["messages"]) for r in server.requests}
    assert run["returncode"] == 0, run["stderr"]
    result = json.loads(run["stdout"])
    coder_output = next(Path(result["run_dir"], "scripts").glob("*solution*.stdout.txt")).read_text()
    return result, prompts, run["peak_mb"], script_peak_mb(coder_output)


def test_a_csv_bigger_than_half_the_memory_cap(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    expected, rows = make_csv(data / "payments.csv", int(SIZE_GB * 1024**3))
    try:
        result, prompts, peak, script_peak = ask(data, "read_csv('{DATA_DIR}/payments.csv')", tmp_path)
    finally:
        (data / "payments.csv").unlink()
    assert result["answer"] == expected and result["outcome"] == "verified"
    coder = prompts["coder"]
    assert "payments.csv is too big to load whole with pandas" in coder and "duckdb.sql(" in coder
    assert "data rows (estimated" in coder                   # the row count, said to be estimated
    assert peak < PEAK_LIMIT_MB and script_peak and script_peak < PEAK_LIMIT_MB, (peak, script_peak)
    print(f"\n{SIZE_GB} GB CSV, {rows:,} rows: largest process peak {peak} MB, script {script_peak} MB, "
          f"{result['elapsed_s']}")


def test_a_hive_partitioned_parquet_folder(tmp_path):
    data = tmp_path / "data"
    expected, rows = make_hive_parquet(data / "payments", int(SIZE_GB * 1024**3 / 8))
    result, prompts, peak, script_peak = ask(
        data, "read_parquet('{DATA_DIR}/payments/**/*.parquet', hive_partitioning=true)", tmp_path)
    assert result["answer"] == expected and result["outcome"] == "verified"
    coder = prompts["coder"]
    assert "## payments/**/*.parquet (parquet dataset" in coder and "hive-partitioned by year, month" in coder
    assert f"{rows:,} rows in all (exact)" in coder
    assert peak < PEAK_LIMIT_MB and script_peak and script_peak < PEAK_LIMIT_MB, (peak, script_peak)
