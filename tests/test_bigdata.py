"""Data bigger than memory, end to end: a real `dsstar ask` (a scripted model behind a local
OpenAI-compatible server) over a generated multi-GB CSV, and over a hive-partitioned Parquet folder
as big on disk, each twice the sandbox's memory cap. The question is answered right with the cap in
force, the prompts steer the model to DuckDB, the finalizer copies the answer from the verified
output (so the data is scanned once), and no process (dsstar, its analyzer children, the sandbox
worker, the script) peaks at 1 GB.

The data is DSSTAR_BIGDATA_GB gigabytes (default 2); the benchmark, benchmarks/bigdata_bench.py,
carries the 2 GB and 10 GB timings. Files are made in the test's tmp folder (the CSV by repeating
one block of rows, the Parquet parts uncompressed: seconds either way), deleted after, and a test
is skipped, saying why, when the disk cannot hold its data twice over."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from bigdata_scenario import GUIDELINES, QUESTION, make_csv, make_hive_parquet, measured, responder, script_peak_mb
from fake_openai import FakeOpenAIServer, role_of

SIZE_GB = float(os.environ.get("DSSTAR_BIGDATA_GB", "2"))
SIZE = int(SIZE_GB * 1024**3)
MEMORY_MB = 1024          # The sandbox's cap for these runs: the data is twice as big, or more.
PEAK_LIMIT_MB = 1024


def room_for_the_data(folder: Path) -> None:
    """The data, and as much again for DuckDB's spill and the run folder, or the test is skipped."""
    free = shutil.disk_usage(folder).free
    if free < 2 * SIZE:
        pytest.skip(f"{free / 1024**3:.1f} GB free in {folder}: a {SIZE_GB:g} GB data test needs "
                    f"{2 * SIZE_GB:g} GB (DSSTAR_BIGDATA_GB sets the size)")


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
    run_dir = Path(result["run_dir"])
    coder_output = next((run_dir / "scripts").glob("*solution*.stdout.txt")).read_text()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    scans = [e for e in events if e["event"] == "execution"]
    return result, prompts, run["peak_mb"], script_peak_mb(coder_output), scans


def check_one_scan_and_memory(result: dict, scans: list[dict], peak: int, script_peak: int | None) -> None:
    assert result["outcome"] == "verified" and result["answer_from"] == "solution_output"
    assert [e["purpose"] for e in scans] == ["solution"]      # the finalizer read no data: one scan in all
    assert peak < PEAK_LIMIT_MB and script_peak and script_peak < PEAK_LIMIT_MB, (peak, script_peak)


def test_a_csv_bigger_than_the_memory_cap(tmp_path):
    room_for_the_data(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    started = time.monotonic()
    expected, rows = make_csv(data / "payments.csv", SIZE)
    size, made = (data / "payments.csv").stat().st_size, time.monotonic() - started
    try:
        result, prompts, peak, script_peak, scans = ask(data, "read_csv('{DATA_DIR}/payments.csv')", tmp_path)
    finally:
        (data / "payments.csv").unlink()
    assert size >= SIZE - 8 * 1024**2                      # within a block of the size asked for
    assert result["answer"] == expected
    check_one_scan_and_memory(result, scans, peak, script_peak)
    coder = prompts["coder"]
    assert "payments.csv is too big to load whole with pandas" in coder and "duckdb.sql(" in coder
    assert "data rows (estimated" in coder                   # the row count, said to be estimated
    print(f"\n{size / 1024**3:.2f} GB CSV, {rows:,} rows, written in {made:.1f} s: largest process peak {peak} MB, "
          f"script {script_peak} MB, its scan {scans[0]['seconds']:.1f} s, {result['elapsed_s']}")


def test_a_hive_partitioned_parquet_folder_as_big(tmp_path):
    room_for_the_data(tmp_path)
    data = tmp_path / "data"
    started = time.monotonic()
    expected, rows = make_hive_parquet(data / "payments", SIZE)
    parts = list((data / "payments").rglob("*.parquet"))
    size, made = sum(p.stat().st_size for p in parts), time.monotonic() - started
    try:
        result, prompts, peak, script_peak, scans = ask(
            data, "read_parquet('{DATA_DIR}/payments/**/*.parquet', hive_partitioning=true)", tmp_path)
    finally:
        shutil.rmtree(data)
    assert size >= SIZE - 8 * 1024**2                      # as big on disk as the CSV, within a part
    assert result["answer"] == expected
    check_one_scan_and_memory(result, scans, peak, script_peak)
    coder = prompts["coder"]
    assert "## payments/**/*.parquet (parquet dataset" in coder and "hive-partitioned by year, month" in coder
    assert f"{rows:,} rows in all (exact)" in coder
    print(f"\n{size / 1024**3:.2f} GB of Parquet in {len(parts)} parts, {rows:,} rows, written in {made:.1f} s: "
          f"largest process peak {peak} MB, script {script_peak} MB, its scan {scans[0]['seconds']:.1f} s, "
          f"{result['elapsed_s']}")
