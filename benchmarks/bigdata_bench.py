"""Data bigger than memory: "Mean amount per country?" over a 2 GB and a 10 GB CSV (6 columns, the
issue's example), three ways, each measured for wall time and the peak RSS of its largest process:

- dsstar: a real `dsstar ask` (a scripted model behind a local OpenAI-compatible server that
  answers the way the prompts steer it: DuckDB over the file in place, and a finalizer that copies
  the answer from the verified output instead of writing a script), default config, so the
  sandbox's 4 GB cap is in force;
- plain pandas (`pd.read_csv` then `groupby`) under the same 4 GB address-space cap: it fails;
- DuckDB run directly, unconfigured and uncapped: the floor.

The target is the whole run within 1.5x of the floor: everything dsstar adds to one query (start-up,
the analysis of the file, the model calls, the sandbox and DuckDB's configuration). It holds only
because the data is scanned once: when the verified output already shows the answer, the finalizer
copies it (`answer_from: solution_output`) rather than writing a script that reads the file again.
The table also gives each script's time against the floor. One run of each (a 10 GB file takes
minutes), not a median.

Files are written under DSSTAR_BENCH_TMP (else the system temp folder) and deleted after; a size
the disk cannot hold (twice the file: DuckDB may spill) is skipped and said so. DSSTAR_BIGDATA_SIZES
(e.g. "2,10") chooses the sizes in GB.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import PYTHON, clean_env, show
from bigdata_scenario import GUIDELINES, QUESTION, make_csv, measured, responder
from fake_openai import FakeOpenAIServer

SIZES_GB = [float(s) for s in os.environ.get("DSSTAR_BIGDATA_SIZES", "2,10").split(",")]
CAP_MB = 4096          # sandbox.memory_mb's default
TARGET = 1.5
SOURCE = "read_csv('{DATA_DIR}/payments.csv')"

PANDAS = f"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({CAP_MB} << 20, {CAP_MB} << 20))
import pandas as pd
frame = pd.read_csv(sys.argv[1])
print(frame.groupby("country")["amount"].mean().round(2))
"""
DUCKDB = """
import sys, duckdb
print(duckdb.sql(f"SELECT country, ROUND(AVG(amount), 2) FROM read_csv('{sys.argv[1]}') GROUP BY 1 ORDER BY 1").fetchall())
"""


def timed(argv: list[str], cwd: Path, env: dict) -> tuple[dict, float]:
    start = time.perf_counter()
    run = measured(argv, cwd, env, timeout=3600)
    return run, time.perf_counter() - start


def dsstar_run(data: Path, work: Path) -> tuple[dict, float, list[float]]:
    """(the JSON result, wall seconds, seconds of each script that scanned the data)."""
    cwd = work / "cwd"
    cwd.mkdir()
    (cwd / "dsstar.yaml").write_text(f"run_dir: {work / 'runs'}\ncode_timeout_s: 1800\n")
    env = clean_env(XDG_CACHE_HOME=str(work / "cache"), XDG_DATA_HOME=str(work / "xdg-data"),
                    XDG_CONFIG_HOME=str(work / "config"))
    with FakeOpenAIServer(responder(SOURCE)) as server:
        run, seconds = timed([PYTHON, "-m", "dsstar_cli", "ask", str(data), QUESTION, "--fresh", "--guidelines", GUIDELINES,
                              "--json", "--model", "openai/fake", "--api-base", server.base_url], cwd, env)
    if run["returncode"] != 0:
        raise SystemExit(f"dsstar ask failed ({run['returncode']}): {run['stderr'][-2000:]}")
    result = json.loads(run["stdout"])
    events = [json.loads(line) for line in Path(result["run_dir"], "events.jsonl").read_text().splitlines()]
    scans = [e["seconds"] for e in events if e.get("event") == "execution"]
    result["peak_mb"] = run["peak_mb"]
    return result, seconds, scans


def bench(size_gb: float, tmp: Path) -> bool:
    data = tmp / "data"
    data.mkdir()
    started = time.perf_counter()
    expected, rows = make_csv(data / "payments.csv", int(size_gb * 1024**3))
    size = (data / "payments.csv").stat().st_size
    print(f"== {size / 1024**3:.1f} GB CSV, {rows:,} rows (written in {time.perf_counter() - started:.0f} s)")
    env = clean_env()
    pandas, pandas_s = timed([PYTHON, "-c", PANDAS, str(data / "payments.csv")], tmp, env)
    failed = pandas["returncode"] != 0
    why = (pandas["stderr"].strip().splitlines() or [""])[-1][:70]
    show("plain pandas, 4 GB cap", f"{'fails' if failed else 'ok'} {pandas_s:.1f} s",
         f"peak {pandas['peak_mb']} MB{f' ({why})' if failed else ''}")
    floor, floor_s = timed([PYTHON, "-c", DUCKDB, str(data / "payments.csv")], tmp, env)
    show("DuckDB directly (the floor)", f"{floor_s:.1f} s", f"peak {floor['peak_mb']} MB")
    result, dsstar_s, scans = dsstar_run(data, tmp)
    right = result["answer"] == expected
    ok = right and dsstar_s <= TARGET * floor_s
    show("dsstar ask, 4 GB cap (whole run)", f"{dsstar_s:.1f} s",
         f"{dsstar_s / floor_s:.2f}x the floor (target <= {TARGET}x) {'ok' if ok else 'MISSED'}")
    show("  ", f"peak {result['peak_mb']} MB", f"answer {'right' if right else 'WRONG'} "
         f"(from {result['answer_from']}); {len(scans)} scan(s) of the data; elapsed {result['elapsed_s']}")
    show("  its scripts, each", ", ".join(f"{s:.1f} s" for s in scans), f"{max(scans) / floor_s:.2f}x the floor")
    return ok


def main() -> None:
    base = Path(os.environ.get("DSSTAR_BENCH_TMP") or tempfile.gettempdir())
    print(f"bigdata: one run each; peak = RSS of the largest process (dsstar, its children, the script)")
    for size_gb in SIZES_GB:
        free = shutil.disk_usage(base).free
        if free < 2.2 * size_gb * 1024**3:
            print(f"== {size_gb:g} GB: skipped, {free / 1024**3:.1f} GB free in {base} (needs {2.2 * size_gb:.0f} GB)")
            continue
        with tempfile.TemporaryDirectory(dir=base, prefix="dsstar-bigdata-") as tmp:
            bench(size_gb, Path(tmp))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
