"""Helpers the benchmark scripts share: timing whole commands, a local model server, the venv's tools."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "benchmarks"
sys.path.insert(0, str(ROOT / "tests"))  # fake_openai, sample_agent: the same fakes the tests use

PYTHON = sys.executable
DSSTAR = [PYTHON, "-m", "dsstar_cli"]


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without API keys or LiteLLM settings, so every command starts equal."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and not k.startswith("LITELLM") and k != "DSSTAR_MODEL"}
    env.update({"NO_COLOR": "1", "OPENAI_API_KEY": "sk-bench"}, **extra)
    return env


def time_command(argv: list[str], runs: int, cwd: Path | None = None, env: dict | None = None) -> list[float]:
    """Wall seconds of each of `runs` runs (after one untimed warm-up that fills the page cache)."""
    subprocess.run(argv, cwd=cwd, env=env or clean_env(), capture_output=True)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, env=env or clean_env(), capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if proc.returncode not in (0, 3):
            raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return times


def median(values: list[float]) -> float:
    return statistics.median(values)


def show(label: str, value: str, target: str = "") -> None:
    print(f"  {label:<46} {value:>18}   {target}")
