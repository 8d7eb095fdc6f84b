"""Analyzer: wall time and peak RSS of `dsstar describe` (a fresh process each run) on the DABStep
data folder, the KramaBench legal folder (132 messy CSVs) and a generated 2 GB CSV; cold (no cache)
and cached. `wc -l` over the 2 GB file is printed beside it as the cost of one full read.

Targets: 2 GB CSV in at most half the time of `wc -l`, at most 300 MB peak RSS; the legal folder
in under 2 s cold; 10,000 small CSVs of one layout in under 5 s cold; 100,000 files (listed, one
example profiled) in under 15 s cold; a cached rerun under 10 % of cold."""

from __future__ import annotations

import os
import random
import subprocess
import tempfile
import time
from pathlib import Path

from _common import DSSTAR, SHARED, clean_env, median, show

from dsstar_cli.analyzer import analyze_folder
from dsstar_cli.analyzer.cache import DescriptionCache
from dsstar_cli.analyzer.limits import AnalyzerLimits

RUNS = 3
MANY_FILES = 10_000
HUGE_FOLDER = 100_000
BIG_BYTES = 2 * 1024**3


def make_big_csv(path: Path) -> None:
    """~2 GB of payment-like rows: a 4 MB block of varied rows written until the size is reached."""
    rng = random.Random(7)
    header = "tx_id,timestamp,merchant,country,amount_eur,is_fraud,channel\n"
    rows = [f"{i},2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00,"
            f"merchant_{rng.randint(1, 400)},{rng.choice(['NL', 'BE', 'FR', 'DE', 'ES', 'IT'])},"
            f"{rng.uniform(1, 2000):.2f},{int(rng.random() < 0.02)},{rng.choice(['web', 'pos', 'app'])}\n"
            for i in range(60_000)]
    block = "".join(rows).encode()
    with path.open("wb") as out:
        out.write(header.encode())
        written = len(header)
        while written < BIG_BYTES:
            out.write(block)
            written += len(block)


def analyse_in_process(folder: Path, cache_dir: Path | None) -> float:
    """Seconds of the analyzer's own work (libraries already imported), as `ask` spends it."""
    start = time.perf_counter()
    analyze_folder(folder, AnalyzerLimits(), lambda event: None, "builtin",
                   cache=DescriptionCache(cache_dir) if cache_dir else None)
    return time.perf_counter() - start


def describe_process(folder: Path, cache: Path, no_cache: bool) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one fresh `dsstar describe` process: what a user waits for."""
    argv = DSSTAR + ["describe", str(folder), "--json"] + (["--no-cache"] if no_cache else [])
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=clean_env(XDG_CACHE_HOME=str(cache)), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    took = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"dsstar describe {folder} failed ({status})")
    return took, usage.ru_maxrss / 1024


def measure(folder: Path) -> dict:
    analyse_in_process(folder, None)  # Warm-up: imports and the page cache.
    with tempfile.TemporaryDirectory() as cache:
        cold = [analyse_in_process(folder, None) for _ in range(RUNS)]
        analyse_in_process(folder, Path(cache))  # Fill the cache.
        cached = [analyse_in_process(folder, Path(cache)) for _ in range(RUNS)]
        process_cold = [describe_process(folder, Path(cache), no_cache=True) for _ in range(RUNS)]
        process_cached = [describe_process(folder, Path(cache), no_cache=False) for _ in range(RUNS)]
    return {"cold": median(cold), "cached": median(cached), "process_cold": median([p[0] for p in process_cold]),
            "process_cached": median([p[0] for p in process_cached]),
            "rss": max(p[1] for p in process_cold + process_cached)}


def report(name: str, m: dict, cold_target: float | None = None) -> None:
    target = f"(target < {cold_target:.0f} s: {'meets' if m['cold'] < cold_target else 'MISSES'})" if cold_target else ""
    show(f"{name}: cold", f"{m['cold']:.3f} s", target)
    ratio = m["cached"] / m["cold"]
    show(f"{name}: cached", f"{m['cached']:.3f} s",
         f"{ratio:.1%} of cold (target < 10 %: {'meets' if ratio < 0.10 else 'MISSES'})")
    show(f"{name}: whole describe process, cold / cached", f"{m['process_cold']:.2f} / {m['process_cached']:.2f} s",
         f"peak RSS {m['rss']:.0f} MB")


def main() -> None:
    print(f"analyzer: median of {RUNS} runs. 'cold'/'cached' time analyze_folder in this process (the work `ask`")
    print("  does, libraries imported); the 'whole describe process' line adds start-up and imports.")
    for name, folder, target in (("DABStep data (6 files)", SHARED / "dabstep" / "data", None),
                                 ("KramaBench legal (132 files)", SHARED / "kramabench" / "legal" / "input", 2.0)):
        if folder.is_dir():
            report(name, measure(folder), target)
        else:
            show(name, "skipped", "(../shared is not present)")
    with tempfile.TemporaryDirectory(dir=os.environ.get("DSSTAR_BENCH_TMP")) as tmp:
        many = Path(tmp) / "many"
        many.mkdir()
        for i in range(MANY_FILES):  # Per-store daily exports: one layout, a few rows each.
            (many / f"store_{i:05d}.csv").write_text(f"day,store,sales\n2025-01-01,{i},{i * 3}\n2025-01-02,{i},{i}\n")
        report(f"{MANY_FILES:,} small CSVs of one layout", measure(many), 5.0)
    with tempfile.TemporaryDirectory(dir=os.environ.get("DSSTAR_BENCH_TMP")) as tmp:
        huge = Path(tmp) / "huge"
        for i in range(HUGE_FOLDER):  # 100 days of exports from 1,000 stores each.
            day = huge / f"day_{i // 1000:03d}"
            day.mkdir(parents=True, exist_ok=True)
            (day / f"store_{i % 1000:04d}.csv").write_text(f"day,store,sales\n2025-01-01,{i},{i * 3}\n")
        cold = median([analyse_in_process(huge, None) for _ in range(RUNS)])
        seconds, rss = describe_process(huge, Path(tmp) / "cache", no_cache=True)
        show(f"{HUGE_FOLDER:,} small CSVs in 100 folders: cold", f"{cold:.2f} s",
             f"(target < 15 s: {'meets' if cold < 15 else 'MISSES'})")
        show(f"{HUGE_FOLDER:,} small CSVs: whole describe process, cold", f"{seconds:.2f} s", f"peak RSS {rss:.0f} MB")
    with tempfile.TemporaryDirectory(dir=os.environ.get("DSSTAR_BENCH_TMP")) as tmp:
        folder = Path(tmp) / "big"
        folder.mkdir()
        big = folder / "payments.csv"
        make_big_csv(big)
        wc = []
        for _ in range(RUNS):
            start = time.perf_counter()
            subprocess.run(["wc", "-l", str(big)], capture_output=True, check=True)
            wc.append(time.perf_counter() - start)
        m = measure(folder)
        size = big.stat().st_size / 1024**3
        show(f"wc -l over the {size:.1f} GB CSV (page cache warm)", f"{median(wc):.3f} s")
        report(f"{size:.1f} GB CSV", m)
        ratio = m["cold"] / median(wc)
        show(f"{size:.1f} GB CSV: cold / wc -l", f"{ratio:.2f}x", f"(target <= 0.5x: {'meets' if ratio <= 0.5 else 'MISSES'})")
        show(f"{size:.1f} GB CSV: peak RSS of describe", f"{m['rss']:.0f} MB",
             f"(target <= 300 MB: {'meets' if m['rss'] <= 300 else 'MISSES'})")


if __name__ == "__main__":
    main()
