"""`dsstar learn DIR --questions FILE` (issue 24): the memory built from a set of questions, and the
report of what was kept and why not, as a user meets them: the CLI in a subprocess, a scripted model
behind a real OpenAI-compatible server on 127.0.0.1 whose requests are counted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fake_openai import FakeOpenAIServer
from test_cli import dsstar

TOTAL = "What is the total amount of all rows?"
BEST = "How much did the region sell in its best year?"
VAT = "How much VAT was paid in 2023?"
QUESTION_LINE = re.compile(r"# Question\n(.+)")
SCRIPTS = {
    TOTAL: 'import pandas as pd\nprint("total:", pd.read_csv("{data}/sales.csv")["amount"].sum())',
    BEST: ('import pandas as pd\nsales = pd.read_csv("{data}/sales.csv")\n'
           'gross = sales.groupby("year")["amount"].sum()\n'
           'print("best year total (refunds counted as sales):", gross.max())\n'
           'print("ALTERNATIVE: refunds subtracted from sales => 250")'),
    VAT: 'import pandas as pd\nprint(list(pd.read_csv("{data}/sales.csv").columns))',
}
FINALS = {
    TOTAL: "```answer\n400\n```",
    BEST: "```answer\n300\n```\n```reading\nalternative: refunds subtracted from sales => 250\n```",
    VAT: "```unanswerable\nno column holds VAT\n```",
}


def respond(role: str, messages: list[dict]) -> str:
    """One step per question, verified at once; the finalizer's reply makes the outcome: a plain
    answer (kept), one with another reading that changes it (ambiguous: not kept), no answer (unanswerable)."""
    question = QUESTION_LINE.search(messages[0]["content"]).group(1)
    data = messages[0]["content"].split('DATA_DIR = "', 1)[1].split('"', 1)[0]
    return {"planner": "Read sales.csv and compute what the question asks.",
            "coder": f"```python\n{SCRIPTS[question].format(data=data)}\n```",
            "verifier": "Yes\nThe output answers it.", "finalizer": FINALS[question]}.get(role, "Add Step")


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond) as running:
        yield running


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "sales.csv").write_text("year,kind,amount\n2022,sale,100\n2023,sale,275\n2023,refund,25\n")
    return folder


def questions_file(tmp_path: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps({"id": key, "question": text}) + "\n"
                            for key, text in (("total", TOTAL), ("best", BEST), ("vat", VAT))))
    return path


def learn(server, tmp_path: Path, data: Path, *flags: str):
    """One `dsstar learn`, and the requests the model server got during it."""
    before = len(server.requests)
    proc = dsstar("learn", str(data), "--questions", str(questions_file(tmp_path)), "--model", "openai/fake",
                  "--api-base", server.base_url, "--workers", "2", *flags, cwd=tmp_path)
    return proc, server.requests[before:]


def test_learn_keeps_what_it_can_says_why_not_and_a_kept_question_then_costs_no_call(server, tmp_path, data):
    proc, calls = learn(server, tmp_path, data, "--json")
    assert proc.returncode == 10, proc.stderr  # The most serious outcome: a question the data cannot answer.
    assert len(calls) == 3 * 4
    report = json.loads(proc.stdout)
    rows = {row["id"]: row for row in report["questions"]}
    assert [row["id"] for row in report["questions"]] == ["total", "best", "vat"]  # The file's order.
    assert (rows["total"]["outcome"], rows["total"]["answer"], rows["total"]["memory"]) == ("verified", "400", "kept")
    assert (rows["best"]["outcome"], rows["best"]["memory"]) == ("verified", "not_kept")
    assert rows["best"]["why"].startswith("ambiguous")
    assert (rows["vat"]["outcome"], rows["vat"]["memory"], rows["vat"]["why"]) == ("unanswerable", "not_kept",
                                                                                   "unanswerable")
    assert report["totals"] == {"questions": 3, "answered": 3, "verified": 2, "kept": 1, "already": 0, "not_kept": 2}
    assert report["memory"]["entries"] == 1 and report["memory"]["path"].endswith("memory.db")
    assert report["exit_code"] == 10 and report["data_dir"] == str(data.resolve())

    # Asked again: answered from the memory, by the run learn made, with no model call.
    before = len(server.requests)
    again = dsstar("ask", str(data), TOTAL, "--json", "--model", "openai/fake", "--api-base", server.base_url,
                   cwd=tmp_path)
    assert server.requests[before:] == []
    assert json.loads(again.stdout)["answer"] == "400"
    assert json.loads(again.stdout)["from_memory"]["run"] == rows["total"]["run"]
    shown = json.loads(dsstar("memory", "show", str(data), "--json", cwd=tmp_path).stdout)
    assert [(e["question"], e["answer"], e["run"]) for e in shown["entries"]] == [(TOTAL, "400", rows["total"]["run"])]

    # The text report, learning again: the kept question is answered from the memory; the others ran again.
    proc, calls = learn(server, tmp_path, data)
    assert proc.returncode == 10 and len(calls) == 2 * 4
    assert "[total] What is the total amount of all rows?\n    verified: 400\n    already in the memory" in proc.stdout
    assert f"[best] {BEST}\n    verified: 300\n    not kept: ambiguous" in proc.stdout
    assert f"[vat] {VAT}\n    unanswerable\n    not kept: unanswerable" in proc.stdout
    assert "3 question(s): 2 verified; 0 kept, 1 already in the memory, 2 not kept" in proc.stdout
    held = f"1 answer(s), {len(shown['functions'])} function(s), {len(shown['conventions'])} convention(s)"
    assert f"the memory for {data.resolve()} now holds {held} (" in proc.stdout
    assert "dsstar learn: [best] verified: '300'" in proc.stderr  # Progress on stderr, one line a question.


def test_bad_input_gets_one_line_and_the_documented_exit_code(tmp_path, data):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n# only a comment\n")
    good = questions_file(tmp_path)
    a_file = data / "sales.csv"
    cases = [(str(data), tmp_path / "missing.txt", 2, "cannot read the questions file"),
             (str(data), empty, 2, "has no questions"),
             (str(a_file), good, 6, "is a file, not a folder"),
             (str(tmp_path / "nowhere"), good, 6, "does not exist")]
    for folder, file, code, said in cases:
        proc = dsstar("learn", folder, "--questions", str(file), "--model", "openai/fake", "--api-base",
                      "http://127.0.0.1:9", cwd=tmp_path)
        assert proc.returncode == code, (folder, file, proc.stderr)
        (line,) = proc.stderr.splitlines()
        assert line.startswith("dsstar: error: ") and said in line and proc.stdout == ""
    proc = dsstar("learn", str(data), "--questions", str(empty), "--json", cwd=tmp_path)
    assert proc.returncode == 2 and json.loads(proc.stdout)["exit_code"] == 2
    proc = dsstar("learn", str(data), cwd=tmp_path)  # No --questions at all: a usage error.
    assert proc.returncode == 2 and "--questions" in proc.stderr
