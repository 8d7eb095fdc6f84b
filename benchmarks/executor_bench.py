"""Executor: per-execution cost of a trivial pandas script (`import pandas; print(1)`), through
Executor.run (integrity snapshots included), in each available tier: the warm worker (one per
run, each script forked from it) against the cold path (a fresh sandbox worker per script).
Target: <= 30 ms warm in every tier."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from _common import median, show

from dsstar_cli.sandbox import Executor
from dsstar_cli.sandbox.tiers import TIERS, probe

RUNS = 20
SCRIPT = "import pandas as pd\nprint(pd.__version__)"


def measure(tier: str, warm: bool) -> tuple[float, float]:
    """(median seconds per execution, seconds until the first one finished)."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        (data / "a.csv").write_text("x\n1\n")
        started = time.perf_counter()
        executor = Executor(Path(tmp) / "run" / "work", data, timeout_s=30, tier=tier, warm=warm)
        try:
            assert executor.run(SCRIPT, "first").ok
            first = time.perf_counter() - started
            times = []
            for i in range(RUNS):
                start = time.perf_counter()
                result = executor.run(SCRIPT, f"s{i}")
                times.append(time.perf_counter() - start)
                assert result.ok, result.stderr
        finally:
            executor.close()
    return median(times), first


def main() -> None:
    print(f"executor: `import pandas; print(...)` through Executor.run, median of {RUNS} runs")
    for tier in TIERS:
        if not probe().available.get(tier):
            show(f"{tier}", "unavailable", probe().details.get(tier, ""))
            continue
        cold, _ = measure(tier, warm=False)
        warm, first = measure(tier, warm=True)
        verdict = "meets" if warm <= 0.030 else "MISSES"
        show(f"warm worker, {tier}", f"{warm * 1000:.1f} ms",
             f"{cold / warm:.0f}x faster than cold ({cold * 1000:.0f} ms; {verdict} target <= 30 ms); "
             f"worker start + 1st run {first * 1000:.0f} ms; {probe().details.get(tier, '')}")


if __name__ == "__main__":
    main()
