"""Loop overhead: a full `dsstar ask` on sample_data against a local OpenAI-compatible server that
waits 1 s per call. Overhead = wall time - (model latency + script run time), where model latency is
the time the server spent on each request and script time is what the executor measured.
Targets: the loop's overhead <= 2 % of its wall time; the whole process's (start-up, litellm's import
and set-up, analysis, the loop) <= 10 % of a run of 8 one-second calls.

Per-call client overhead is shown too. Two overall figures: the whole process (start-up, the one-time `import litellm`, analysis, loop) and the
loop alone (run_started -> answer events), which is where per-call overhead would show."""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

from _common import DSSTAR, ROOT, clean_env, median, show
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond

RUNS = 3
DELAY_S = 1.0


def one_run(server: FakeOpenAIServer, workdir: Path) -> dict:
    first = len(server.busy_s)
    start = time.perf_counter()
    proc = subprocess.run(DSSTAR + ["ask", str(ROOT / "sample_data"), QUESTION, "--json", "--model", "openai/fake",
                                    "--api-base", server.base_url], cwd=workdir, env=clean_env(),
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    result = json.loads(proc.stdout)
    assert result["outcome"] == "verified", result["reason"]
    events = [json.loads(line) for line in (Path(result["run_dir"]) / "events.jsonl").read_text().splitlines()]
    model = sum(server.busy_s[first:])
    scripts = sum(e["seconds"] for e in events if e["event"] == "execution")
    loop = next(e["time"] for e in events if e["event"] == "answer") - events[0]["time"]
    # Calls run one at a time, so the client's i-th call is the server's i-th request.
    client = [e["seconds"] for e in events if e["event"] == "call"]
    per_call = [c - s for c, s in zip(client, server.busy_s[first:])]
    return {"wall": wall, "model": model, "scripts": scripts, "loop": loop, "calls": len(server.busy_s) - first,
            "analysis": result["elapsed_s"]["analysis"], "first_call": per_call[0],
            "per_call": median(per_call[1:])}


def main() -> None:
    with FakeOpenAIServer(respond, delay_s=DELAY_S) as server, tempfile.TemporaryDirectory() as tmp:
        runs = [one_run(server, Path(tmp)) for _ in range(RUNS)]
    m = {key: median([r[key] for r in runs]) for key in runs[0]}
    useful = m["model"] + m["scripts"]
    whole = (m["wall"] - useful) / m["wall"]
    loop = (m["loop"] - useful) / m["loop"]
    print(f"loop overhead: dsstar ask on sample_data, server waits {DELAY_S:.0f} s per call, median of {RUNS} runs")
    show("model calls per run", f"{m['calls']:.0f}")
    show("model latency (server-side sum)", f"{m['model']:.2f} s")
    show("script run time (executor's sum)", f"{m['scripts']:.2f} s")
    show("analysis of sample_data", f"{m['analysis']:.2f} s")
    show("client overhead of the first call", f"{m['first_call'] * 1000:.0f} ms", "(litellm's lazy set-up)")
    show("client overhead per later call (median)", f"{m['per_call'] * 1000:.1f} ms",
         f"{m['per_call'] / DELAY_S:.1%} of a {DELAY_S:.0f} s call")
    show("loop wall (run_started -> answer)", f"{m['loop']:.2f} s",
         f"overhead {loop:.1%} ({'meets' if loop <= 0.02 else 'MISSES'} target <= 2 %)")
    show("process wall (exec -> exit)", f"{m['wall']:.2f} s",
         f"overhead {whole:.1%} ({'meets' if whole <= 0.10 else 'MISSES'} target <= 10 %)")


if __name__ == "__main__":
    main()
