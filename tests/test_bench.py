"""`dsstar bench` end to end: a real dsstar process, litellm, and a local model server that always
answers "NL" — so exactly the tasks whose answer is NL are scored correct."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from test_cli import dsstar

DABSTEP = ROOT.parent / "shared" / "benchmarks" / "dabstep"


def always_nl(role: str, messages: list) -> str:
    if role == "planner":
        return "Print the answer."
    if role == "verifier":
        return "Yes"
    if role == "router":
        return "Add Step"
    return "```python\nprint('NL')\n```"


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(always_nl) as running:
        yield running


def bench(server, *args: str, cwd: Path):
    return dsstar("bench", *args, "--model", "openai/fake", "--api-base", server.base_url, cwd=cwd)


def write_tasks(path: Path, answers: list[str]) -> Path:
    lines = [json.dumps({"task_id": str(n), "question": f"Question {n}?", "guidelines": "Just the code.",
                         "level": "easy" if n % 2 else "hard", "answer": answer})
             for n, answer in enumerate(answers, 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.skipif(not DABSTEP.is_dir(), reason="../shared/benchmarks/dabstep is not present")
def test_dabstep_dev_tasks_an_always_nl_model_scores_exactly_task_5(server, tmp_path):
    out, submission = tmp_path / "results.jsonl", tmp_path / "submission.jsonl"
    proc = bench(server, str(DABSTEP / "tasks_dev.jsonl"), "--data", str(DABSTEP / "data"), "--workers", "2",
                 "--out", str(out), "--submission", str(submission), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    scored = rows(out)
    assert len(scored) == 10
    assert [r["task_id"] for r in scored if r["correct"]] == ["5"]
    for row in scored:
        assert {"task_id", "level", "answer", "expected", "correct", "outcome", "rounds", "calls", "input_tokens",
                "output_tokens", "cost_usd", "seconds", "run_dir"} <= row.keys()
        assert row["calls"] == 4 and row["input_tokens"] > 0 and Path(row["run_dir"]).is_dir()
    summary = {line["level"]: line for line in json.loads(proc.stdout)["summary"]}
    assert (summary["easy"]["correct"], summary["easy"]["tasks"]) == (1, 3)
    assert (summary["hard"]["correct"], summary["hard"]["tasks"]) == (0, 7)
    assert summary["all"]["accuracy"] == 0.1 and summary["all"]["cost_usd"] is None
    entries = rows(submission)
    assert [e["task_id"] for e in entries][:3] == ["5", "49", "70"]
    assert all(e["agent_answer"] == "NL" and e["reasoning_trace"] for e in entries)


def test_scores_levels_and_prints_a_table(server, tmp_path):
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["NL", "BE", "nl", "Not Applicable"])
    proc = bench(server, str(tasks), "--data", str(SAMPLE_DATA), "--workers", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    table = proc.stdout
    assert "accuracy" in table and "easy" in table and "hard" in table
    easy_line = next(line for line in table.splitlines() if "easy" in line)
    assert "2/2" in easy_line and "100.0%" in easy_line   # tasks 1 and 3
    hard_line = next(line for line in table.splitlines() if "hard" in line)
    assert "0/2" in hard_line


def test_resume_runs_only_unfinished_tasks_and_a_rerun_needs_resume(server, tmp_path):
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["NL", "BE", "NL"])
    out = tmp_path / "results.jsonl"
    first = bench(server, str(tasks), "--data", str(SAMPLE_DATA), "--limit", "2", "--out", str(out), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert sorted(r["task_id"] for r in rows(out)) == ["1", "2"]

    again = bench(server, str(tasks), "--data", str(SAMPLE_DATA), "--out", str(out), cwd=tmp_path)
    assert again.returncode == 2 and "--resume" in again.stderr  # Never overwrites earlier results.

    with out.open("a") as f:
        f.write('{"task_id": "3", "outcome": "verif')  # A row cut short by a crash: task 3 runs again.
    requests_before = len(server.requests)
    resumed = bench(server, str(tasks), "--data", str(SAMPLE_DATA), "--out", str(out), "--resume", "--json",
                    cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "2 already done, 1 to run" in resumed.stderr
    assert len(server.requests) - requests_before == 4          # one task: planner, coder, verifier, finalizer
    summary = json.loads(resumed.stdout)["summary"][-1]
    assert (summary["tasks"], summary["correct"]) == (3, 2)


def test_kramabench_workload_uses_input_beside_it(server, tmp_path):
    domain = tmp_path / "legal"
    (domain / "input").mkdir(parents=True)
    (domain / "input" / "codes.csv").write_text("country,code\nNetherlands,NL\nBelgium,BE\n")
    (domain / "workload.json").write_text(json.dumps([
        {"id": "legal-easy-1", "query": "Code?", "answer": "NL", "answer_type": "string_exact"},
        {"id": "legal-hard-2", "query": "Codes?", "answer": ["NL", "BE"], "answer_type": "list_exact"},
        {"id": "legal-hard-3", "query": "Count?", "answer": 3, "answer_type": "numeric_exact"},
    ]))
    out = tmp_path / "results.jsonl"
    proc = bench(server, str(domain / "workload.json"), "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    by_id = {r["task_id"]: r for r in rows(out)}
    assert by_id["legal-easy-1"]["correct"] is True
    assert by_id["legal-hard-2"]["score"] == pytest.approx(2 / 3, abs=1e-3)  # F1 of [NL] against [NL, BE]
    assert by_id["legal-hard-3"]["correct"] is False and by_id["legal-hard-3"]["level"] == "hard"


@pytest.mark.parametrize("content, message", [
    ('{"task_id": 1, "question": "q"}\n{not json', "is not valid JSON"),
    ('{"question": "no id"}', 'needs "task_id"'),
    ("", "has no tasks"),
])
def test_bad_task_files_are_usage_errors(server, tmp_path, content, message):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(content)
    proc = bench(server, str(tasks), "--data", str(SAMPLE_DATA), cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_level_and_limit_select_tasks(server, tmp_path):
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["NL", "BE", "NL", "BE"])
    out = tmp_path / "results.jsonl"
    proc = bench(server, str(tasks), "--data", str(SAMPLE_DATA), "--level", "hard", "--limit", "1", "--out",
                 str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [(r["task_id"], r["level"]) for r in rows(out)] == [("2", "hard")]
    bad = bench(server, str(tasks), "--data", str(SAMPLE_DATA), "--level", "extreme", cwd=tmp_path)
    assert bad.returncode == 2 and "--level must be one of" in bad.stderr


def test_with_memory_a_series_uses_and_fills_the_folders_memory_and_without_it_never(server, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task_id": str(n), "question": "Question 1?", "level": "easy",
                                         "answer": "NL"}) + "\n" for n in (1, 2)))
    before = len(server.requests)
    plain = bench(server, str(tasks), "--data", str(SAMPLE_DATA), "--out", str(tmp_path / "plain.jsonl"), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert len(server.requests) - before == 8 and [r["from_memory"] for r in rows(tmp_path / "plain.jsonl")] == [None] * 2
    before = len(server.requests)
    series = bench(server, str(tasks), "--data", str(SAMPLE_DATA), "--memory", "--out", str(tmp_path / "memory.jsonl"),
                   cwd=tmp_path)
    assert series.returncode == 0, series.stderr
    first, second = rows(tmp_path / "memory.jsonl")
    assert len(server.requests) - before == 4  # The second task, the same question: from the memory.
    assert (first["from_memory"], second["calls"], second["correct"]) == (None, 0, True)
    assert second["from_memory"]["run"] == Path(first["run_dir"]).name
