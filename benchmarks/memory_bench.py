"""A question asked again on an unchanged folder: answered from the folder's memory (no model call,
no sandbox, no analysis). Target: under 1 s of wall time for the whole `dsstar ask` process, median
of RUNS, after one full run (untimed) has put the verified answer in the memory.

Also shown, for scale: the first (full) run of the same question against the scripted model, and
`dsstar --version` (the interpreter's and the CLI's start-up, which the answer from memory pays too)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from _common import DSSTAR, ROOT, clean_env, median, show
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond

RUNS = 7
TARGET_S = 1.0


def main() -> None:
    print(f"the same question again on an unchanged folder, median of {RUNS} runs")
    with FakeOpenAIServer(respond) as server, tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        shutil.copytree(ROOT / "sample_data", data)
        env = clean_env(XDG_CACHE_HOME=str(Path(tmp) / "cache"), XDG_DATA_HOME=str(Path(tmp) / "share"),
                        XDG_CONFIG_HOME=str(Path(tmp) / "config"))
        argv = DSSTAR + ["ask", str(data), QUESTION, "--json", "--model", "openai/fake", "--api-base", server.base_url]
        first, result = timed(argv, tmp, env)
        if result["from_memory"] is not None or len(server.requests) != 8:
            raise SystemExit("the first run was not a full run: is the memory of this machine's user in use?")
        show("first run (full: 8 scripted model calls)", f"{first * 1000:.0f} ms")
        times = []
        for _ in range(RUNS):
            took, result = timed(argv, tmp, env)
            if result["from_memory"] is None or len(server.requests) != 8:
                raise SystemExit(f"not answered from memory: {result.get('reason')}")
            times.append(took)
        version = median([timed_plain(DSSTAR + ["--version"], tmp, env) for _ in range(RUNS)])
    took = median(times)
    verdict = "meets" if took < TARGET_S else "MISSES"
    show("asked again (from memory, no model call)", f"{took * 1000:.0f} ms", f"({verdict} target < 1000 ms)")
    show("  range", f"{min(times) * 1000:.0f}-{max(times) * 1000:.0f} ms")
    show("dsstar --version (start-up alone)", f"{version * 1000:.0f} ms")


def timed(argv: list[str], cwd: str, env: dict) -> tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"dsstar ask failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return took, json.loads(proc.stdout)


def timed_plain(argv: list[str], cwd: str, env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
