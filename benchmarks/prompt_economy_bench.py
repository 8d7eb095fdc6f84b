"""Prompt economy: input tokens per call and per task on the 10 DABStep dev tasks, counted by a
local OpenAI-compatible server from what it receives (characters / 4, the usual estimate).

The scripted model behaves like an average DS-STAR run: the verifier says No until the plan has
three steps (3 rounds, 12 calls a task, close to DS-STAR's 12.7), and every script prints ~1,500
characters of table-like output. DS-STAR reports 154,669 input tokens and 12.7 calls per DABStep
dev task; our figure is printed beside it."""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections import defaultdict

from _common import DSSTAR, SHARED, clean_env, show
from fake_openai import FakeOpenAIServer, role_of

DABSTEP = SHARED / "dabstep"
STEPS_TO_VERIFY = 3
OUTPUT = "\n".join(f"merchant_{i:02d}  {i * 1.37:10.4f}  {i * 31 % 97:5d}  category_{i % 7}" for i in range(40))
SCRIPT = f"```python\nprint('''{OUTPUT}''')\n```"


def plan_steps(messages: list[dict]) -> int:
    text = messages[-1]["content"]
    plan = text.split("# Plan")[-1] if "# Plan" in text else ""
    return len(re.findall(r"^\d+\. ", plan, re.MULTILINE))


def respond(role: str, messages: list[dict]) -> str:
    if role == "planner":
        return "Load fees.json and compute the figure the question asks for, per the manual's rules."
    if role == "verifier":
        return "Yes" if plan_steps(messages) >= STEPS_TO_VERIFY else "No: more work is needed."
    if role == "router":
        return "Add Step"
    return SCRIPT


def main() -> None:
    if not DABSTEP.is_dir():
        print("prompt economy: skipped (../shared/benchmarks/dabstep is not present)")
        return
    with FakeOpenAIServer(respond) as server, tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(DSSTAR + ["bench", str(DABSTEP / "tasks_dev.jsonl"), "--data", str(DABSTEP / "data"),
                                        "--model", "openai/fake", "--api-base", server.base_url, "--json",
                                        "--max-rounds", "10"], cwd=tmp, env=clean_env(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-2000:])
        summary = json.loads(proc.stdout)["summary"][-1]
        by_role: dict[str, list[int]] = defaultdict(list)
        for request in server.requests:
            by_role[role_of(request["messages"])].append(sum(len(m["content"]) for m in request["messages"]) // 4)
    calls = sum(len(v) for v in by_role.values())
    total = sum(sum(v) for v in by_role.values())
    tasks = summary["tasks"]
    print(f"prompt economy: {tasks} DABStep dev tasks, {STEPS_TO_VERIFY} rounds each, tokens = characters / 4")
    show("calls per task", f"{calls / tasks:.1f}", "(DS-STAR: 12.7)")
    show("input tokens per call (mean)", f"{total / calls:,.0f}")
    for role, sizes in sorted(by_role.items()):
        show(f"  {role} ({len(sizes)} calls)", f"{sum(sizes) / len(sizes):,.0f}")
    show("input tokens per task (mean)", f"{total / tasks:,.0f}",
         f"DS-STAR: 154,669 -> ours is {total / tasks / 154669:.1%} of it")
    show("dsstar's own count (usage.input_tokens, mean)", f"{summary['mean_input_tokens']:,.0f}")


if __name__ == "__main__":
    main()
