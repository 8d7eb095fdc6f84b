"""Prompt economy: input tokens per call, per role and per task, counted by a local OpenAI-compatible
server from what it receives (characters / 4, the usual estimate), and the tokens its simulated
prefix cache would serve (OpenAI's rule: the longest prefix shared with an earlier request, past
1,024 tokens, in 128-token blocks).

Two folders: the 10 DABStep dev tasks (7 files, a 22 KB manual), with the verifier saying No until
the plan has three steps (3 rounds, 12 calls a task, close to DS-STAR's 12.7; DS-STAR reports
154,669 input tokens a task); and the first 6 KramaBench legal tasks (132 files), with two steps
(2 rounds, 8 calls: issue 13's targets are <= 60k input tokens and <= 8 calls a task). Every
script prints ~1,500 characters of table-like output."""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

from _common import DSSTAR, SHARED, clean_env, show
from fake_openai import FakeOpenAIServer, role_of

OUTPUT = "\n".join(f"merchant_{i:02d}  {i * 1.37:10.4f}  {i * 31 % 97:5d}  category_{i % 7}" for i in range(40))
SCRIPT = f"```python\nprint('''{OUTPUT}''')\n```"


def plan_steps(messages: list[dict]) -> int:
    text = messages[-1]["content"]
    plan = text.split("# Plan")[-1] if "# Plan" in text else ""
    return len(re.findall(r"^\d+\. ", plan, re.MULTILINE))


def responder(steps_to_verify: int):
    def respond(role: str, messages: list[dict]) -> str:
        if role == "planner":
            return "Load the relevant file and compute the figure the question asks for, per the documents' rules."
        if role == "verifier":
            return "Yes" if plan_steps(messages) >= steps_to_verify else "No\nMore work is needed."
        if role == "router":
            return "Add Step"
        return SCRIPT
    return respond


def measure(name: str, tasks: Path, data: Path, steps: int, extra: list[str], target: str) -> None:
    with FakeOpenAIServer(responder(steps)) as server, tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(DSSTAR + ["bench", str(tasks), "--data", str(data), "--model", "openai/fake",
                                        "--api-base", server.base_url, "--json", "--max-rounds", "10", *extra],
                              cwd=tmp, env=clean_env(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-2000:])
        summary = json.loads(proc.stdout)["summary"][-1]
        by_role: dict[str, list[int]] = defaultdict(list)
        for request in server.requests:
            by_role[role_of(request["messages"])].append(sum(len(m["content"]) for m in request["messages"]) // 4)
    calls = sum(len(v) for v in by_role.values())
    total = sum(sum(v) for v in by_role.values())
    tasks_run = summary["tasks"]
    print(f"prompt economy, {name}: {tasks_run} tasks, {steps} rounds each, tokens = characters / 4")
    show("calls per task", f"{calls / tasks_run:.1f}")
    show("input tokens per call (mean)", f"{total / calls:,.0f}")
    for role, sizes in sorted(by_role.items()):
        show(f"  {role} ({len(sizes)} calls)", f"{sum(sizes) / len(sizes):,.0f}")
    show("input tokens per task (mean)", f"{total / tasks_run:,.0f}", target.format(share=total / tasks_run / 154669))
    show("  of which a prefix cache serves (mean)", f"{summary.get('mean_cached_input_tokens') or 0:,.0f}",
         "(usage.cached_input_tokens, as the server reported)")
    show("dsstar's own count (usage.input_tokens, mean)", f"{summary['mean_input_tokens']:,.0f}")


def main() -> None:
    dabstep, legal = SHARED / "dabstep", SHARED / "kramabench" / "legal"
    if not dabstep.is_dir() and not legal.is_dir():
        print("prompt economy: skipped (../shared/benchmarks is not present)")
        return
    if dabstep.is_dir():
        measure("DABStep dev", dabstep / "tasks_dev.jsonl", dabstep / "data", 3, [],
                "DS-STAR: 154,669 -> ours is {share:.1%} of it")
    if legal.is_dir():
        measure("KramaBench legal", legal / "workload.json", legal / "input", 2, ["--limit", "6"],
                "target <= 60,000")


if __name__ == "__main__":
    main()
