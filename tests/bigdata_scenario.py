"""Data bigger than memory, shared by tests/test_bigdata.py and benchmarks/bigdata_bench.py: a
generated CSV of any size (or a hive-partitioned Parquet folder), the question "Mean amount per
country?" with its exact answer, a scripted model that answers it the way the prompts steer it
(DuckDB over the files in place), and a real `dsstar ask` whose peak memory is measured.

The CSV repeats one block of rows, so its answer is the block's (and the file is written at disk
speed: 2 GB in seconds); its 6 columns are those of the issue's example."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

COUNTRIES = ("DE", "FR", "US", "GB", "IT", "ES", "NL", "SE", "PL", "JP")
BLOCK_ROWS = 100_000
QUESTION = "Mean amount per country?"
GUIDELINES = "One line per country, sorted by country: CODE: mean rounded to 2 decimals."
HEADER = "id,ts,country,amount,category,flag\n"


def _block() -> tuple[str, dict[str, tuple[int, int]]]:
    """One block of rows and, per country, (rows, sum of amounts in cents)."""
    lines, sums = [], {c: (0, 0) for c in COUNTRIES}
    for i in range(BLOCK_ROWS):
        country = COUNTRIES[(i * 7 + i // 13) % len(COUNTRIES)]
        cents = (i * 7919) % 100_000
        rows, total = sums[country]
        sums[country] = (rows + 1, total + cents)
        lines.append(f"{i},2025-{1 + i % 12:02d}-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}:00,{country},"
                     f"{cents // 100}.{cents % 100:02d},cat{i % 50},{i % 2}\n")
    return "".join(lines), sums


def answer(sums: dict[str, tuple[int, int]]) -> str:
    return "\n".join(f"{c}: {total / rows / 100:.2f}" for c, (rows, total) in sorted(sums.items()))


def make_csv(path: Path, size_bytes: int) -> tuple[str, int]:
    """Write a CSV of about `size_bytes`; (the expected answer, data rows)."""
    block, sums = _block()
    data = block.encode()
    repeats = max(1, size_bytes // len(data))
    with path.open("wb") as handle:
        handle.write(HEADER.encode())
        for _ in range(repeats):
            handle.write(data)
    return answer(sums), repeats * BLOCK_ROWS


def make_hive_parquet(folder: Path, size_bytes: int) -> tuple[str, int]:
    """A `year=YYYY/month=MM/part-N.parquet` folder of about `size_bytes` on disk: (expected answer,
    rows). Every part is the block's rows, all 6 columns, written without compression or dictionary
    encoding, so the folder's bytes are as many as its data's (compressed, the repeated block would
    shrink threefold and "2 GB" would mean three times the rows); a part takes ~10 ms to write."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    block, sums = _block()
    table = pacsv.read_csv(pa.py_buffer((HEADER + block).encode()),
                           convert_options=pacsv.ConvertOptions(column_types={"ts": pa.string()}))
    folder.mkdir(parents=True, exist_ok=True)
    plain = {"compression": "none", "use_dictionary": False}
    probe = folder / ".probe.parquet"
    pq.write_table(table, probe, **plain)
    per_part = probe.stat().st_size
    probe.unlink()
    parts = max(4, size_bytes // per_part)
    for n in range(parts):
        year, month = 2020 + n // 12 % 5, 1 + n % 12
        part = folder / f"year={year}" / f"month={month:02d}"
        part.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, part / f"part-{n // 60}.parquet", **plain)
    return answer(sums), parts * BLOCK_ROWS


PEAK = "import resource\nprint('script peak MB:', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)\n"


def coder_script(source: str, data_dir: str) -> str:
    """What the coder writes after the prompts' note: DuckDB over the file(s) in place (`source`:
    the FROM clause, with {DATA_DIR}); it also prints the script's own peak memory."""
    return ("```python\nimport duckdb\n"
            f"DATA_DIR = {data_dir!r}\n"
            f"means = duckdb.sql(f\"SELECT country, ROUND(AVG(amount), 2) AS mean FROM {source} "
            "GROUP BY country ORDER BY country\").df()\n"
            "for row in means.itertuples():\n    print(f'{row.country}: {row.mean:.2f}')\n"
            + PEAK + "```")


RESULT_LINE = re.compile(r"^[A-Z]{2}: -?\d+\.\d{2}$", re.MULTILINE)


def answer_from_output(messages: list[dict]) -> str:
    """The finalizer's reply when the output already holds the answer: its result lines, copied
    (the peak-memory line dropped), in an ```answer block. No script, so the data is read once."""
    output = messages[-1]["content"].split("# Its output", 1)[1]
    return "```answer\n" + "\n".join(RESULT_LINE.findall(output)) + "\n```"


def responder(source: str):
    """The scripted model: plans the group-by, writes it with DuckDB, verifies it, and answers by
    copying the per-country lines from the output (the finalizer's direct answer)."""

    def respond(role: str, messages: list[dict]) -> str:
        if role == "planner":
            return "Compute the mean amount per country over the whole data, in place with DuckDB."
        if role == "verifier":
            return "Yes"
        if role == "finalizer":
            return answer_from_output(messages)
        if role in ("coder", "debugger"):
            found = (re.search(r"DATA_DIR = [\"']([^\"']*)", m["content"]) for m in reversed(messages))
            data_dir = next(match for match in found if match).group(1)
            return coder_script(source, data_dir)
        return "Add Step"

    return respond


MEASURE = """
import json, resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True, stdin=subprocess.DEVNULL)
print(json.dumps({"returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr[-3000:],
                  "peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024}))
"""


def measured(argv: list[str], cwd: Path, env: dict, timeout: float) -> dict:
    """Run `argv`; its result and the peak RSS of the largest process among it and everything it
    started (dsstar, its analyzer children, the sandbox worker, the scripts), in MB."""
    proc = subprocess.run([sys.executable, "-c", MEASURE, *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return json.loads(proc.stdout)


def script_peak_mb(output: str) -> int | None:
    found = re.findall(r"script peak MB: (\d+)", output)
    return int(found[-1]) if found else None
