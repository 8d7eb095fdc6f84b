"""The reading behind an answer (readings.py): its assumptions, the alternatives a script printed,
the note kept out of the answer, and an answer the data cannot give; shown in the live view, the
plain lines, `runs show` and --json, and told apart by a script."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT
from dsstar_cli import readings
from dsstar_cli.roles import finalizer
from fake_openai import FakeOpenAIServer
from test_cli import cli_env, dsstar

QUESTION = "How much did the region sell in its best year?"
SCRIPT = '''```python
import pandas as pd
DATA_DIR = "{data}"
sales = pd.read_csv(f"{{DATA_DIR}}/sales.csv")
gross = sales.groupby("year")["amount"].sum()
net = sales[sales["kind"] == "sale"].groupby("year")["amount"].sum() - sales[sales["kind"] == "refund"].groupby("year")["amount"].sum()
print("best year (gross):", gross.idxmax())
print("total in best year (refunds counted as sales):", gross.max())
print("ASSUMPTION: refunds are sales like any other row")
print("ALTERNATIVE: refunds subtracted from sales =>", net[gross.idxmax()])
```'''
READING = ("```answer\n{answer}\n```\n```note\nyear 2023\n```\n"
           "```reading\nassumption: refunds are sales like any other row\n"
           "alternative: refunds subtracted from sales => 250\n"
           "alternative: only the first quarter => 999\n```")   # 999: printed by no script, so dropped


def make_data(folder: Path) -> Path:
    folder.mkdir()
    (folder / "sales.csv").write_text("year,kind,amount\n2022,sale,100\n2023,sale,275\n2023,refund,25\n")
    return folder


def responder(final: str):
    def respond(role: str, messages: list[dict]) -> str:
        data = messages[0]["content"].split('DATA_DIR = "', 1)[1].split('"', 1)[0]
        return {"planner": "Sum amount per year and give the best year's total, refunds counted as sales; "
                           "also print the total with refunds subtracted.",
                "coder": SCRIPT.format(data=data), "verifier": "Yes\nThe output gives the best year's total.",
                "finalizer": final}.get(role, "Add Step")
    return respond


@pytest.fixture
def data(tmp_path) -> Path:
    return make_data(tmp_path / "data")


def schema() -> dict:
    return json.loads(dsstar("schema", cwd=ROOT).stdout)


def ask(server, data: Path, cwd: Path, *flags: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return dsstar("ask", str(data), QUESTION, "--model", "openai/fake", "--api-base", server.base_url, *flags,
                  cwd=cwd, env_extra=env)


def test_the_reading_reaches_json_plain_lines_live_view_and_runs_show(data, tmp_path):
    with FakeOpenAIServer(responder(READING.format(answer="300"))) as server:
        as_json = ask(server, data, tmp_path, "--json")
        plain = ask(server, data, tmp_path)
        live = ask(server, data, tmp_path, env={"FORCE_COLOR": "1", "COLUMNS": "160"})
    result = json.loads(as_json.stdout)
    jsonschema.validate(result, schema())
    assert (as_json.returncode, result["outcome"], result["answer"], result["note"]) == (0, "verified", "300",
                                                                                          "year 2023")
    assert result["assumptions"] == ["refunds are sales like any other row"]
    # The guessed alternative (999, printed by no script) is gone; the printed one stays.
    assert result["alternatives"] == [{"reading": "refunds subtracted from sales", "answer": "250"}]
    assert result["ambiguous"] is True and result["exit_code"] == 0

    assert plain.returncode == 0 and plain.stdout == "300\n"   # The answer alone: it parses.
    for line in ("dsstar: note: year 2023", "dsstar: assumed: refunds are sales like any other row",
                 "dsstar: other reading: refunds subtracted from sales => 250"):
        assert line in plain.stderr.splitlines(), line
    assert "999" not in plain.stderr

    assert "─" in live.stderr or "╭" in live.stderr           # The live view's panel, not plain lines.
    for text in ("300   (year 2023)", "assumed: refunds are sales like any other row",
                 "other reading: refunds subtracted from sales => 250", "1 other reading of the question"):
        assert text in live.stderr, text

    run = Path(result["run_dir"]).name
    shown = dsstar("runs", "show", run, cwd=tmp_path)
    assert "dsstar: other reading: refunds subtracted from sales => 250" in shown.stdout.splitlines()
    assert "dsstar: note: year 2023" in shown.stdout.splitlines()
    replay = json.loads(dsstar("runs", "show", run, "--json", cwd=tmp_path).stdout)
    assert replay["result"]["alternatives"] == result["alternatives"]
    answer_event, = [e for e in replay["events"] if e["event"] == "answer"]
    assert answer_event["note"] == "year 2023" and answer_event["assumptions"] == result["assumptions"]


CI_SCRIPT = """#!/usr/bin/env bash
# What a CI job does: one reading passes, another reading that changes the answer stops the job.
dsstar() {{ "{python}" -m dsstar_cli "$@"; }}
dsstar ask "$1" "$2" --json --strict --fresh --model openai/fake --api-base "$3" > result.json
case $? in
  0) echo "one reading: $(python3 -c 'import json; print(json.load(open("result.json"))["answer"])')" ;;
  9) echo "ambiguous: $(python3 -c 'import json; r = json.load(open("result.json")); print(r["answer"], [a["answer"] for a in r["alternatives"]])')" ;;
  *) echo "other: $?" ;;
esac
"""


def test_a_script_tells_one_reading_from_another_that_changes_the_answer(data, tmp_path):
    script = tmp_path / "ci.sh"
    script.write_text(CI_SCRIPT.format(python=os.sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    single = "```answer\n300\n```\n```reading\nassumption: refunds are sales like any other row\n```"
    lines = []
    for final in (single, READING.format(answer="300")):
        with FakeOpenAIServer(responder(final)) as server:
            proc = subprocess.run([str(script), str(data), QUESTION, server.base_url], cwd=tmp_path,
                                  env=cli_env(tmp_path), capture_output=True, text=True, timeout=120)
        lines.append(proc.stdout.strip())
    assert lines == ["one reading: 300", "ambiguous: 300 ['250']"]


def test_a_question_the_data_cannot_answer_is_its_own_outcome(data, tmp_path):
    final = "```unanswerable\nThe folder holds sales only; no file has costs.\n```"
    with FakeOpenAIServer(responder(final)) as server:
        proc = ask(server, data, tmp_path, "--json")
        plain = ask(server, data, tmp_path)
    result = json.loads(proc.stdout)
    jsonschema.validate(result, schema())
    assert (proc.returncode, result["outcome"], result["answer"], result["verified"]) == (10, "unanswerable", None,
                                                                                          False)
    assert result["reason"] == "the data cannot answer the question: The folder holds sales only; no file has costs."
    assert plain.returncode == 10 and plain.stdout == ""
    assert "dsstar: outcome unanswerable: the data cannot answer the question" in plain.stderr


# -- the pieces ----------------------------------------------------------------------------------

def test_the_finalizer_reply_keeps_answer_note_and_reading_apart():
    reply = finalizer.parse(READING.format(answer="2065.10"))
    assert (reply.answer, reply.script, reply.note) == ("2065.10", None, "year 2023")
    assert reply.reading.assumptions == ("refunds are sales like any other row",)
    assert [a.answer for a in reply.reading.alternatives] == ["250", "999"]
    scripted = finalizer.parse("```python\nprint(1)\n```\n```note\nin USD\n```")
    assert (scripted.script, scripted.note, scripted.answer) == ("print(1)\n", "in USD", None)
    assert finalizer.parse("```unanswerable\nno cost column\n```").unanswerable == "no cost column"
    assert finalizer.parse("```note\nonly a note\n```") is None          # no answer: re-asked


@pytest.mark.parametrize("value, output, shown", [
    ("0.52", "share: 0.5234\n", True),            # a printed number, rounded as the value is
    ("1,937,041", "total = 1937041", True),
    ("$2,065.10", "cost per acre: 2065.1", True),
    ("82", "counts: 55 and 53", False),
    ("Golden Gate Gaming", "top: golden gate  gaming", True),
    ("A, B", "names: A\nother: B", True),
    ("A, C", "names: A\nother: B", False),
])
def test_an_alternative_is_kept_only_when_a_script_printed_its_answer(value, output, shown):
    assert readings.printed(value, output) is shown


def test_alternatives_that_give_the_same_answer_or_were_never_printed_are_dropped():
    named = readings.parse("assumption: nulls apply to all\n- alternative: empty lists match nothing => 0.5234\n"
                           "alternative: same thing said twice => 0.52\nalternative: a guess => 7")
    kept = readings.behind(named, "0.52", "rate: 0.52\nALTERNATIVE: empty lists match nothing => 0.5234")
    assert kept.alternatives == ()   # 0.5234 is 0.52 at the answer's precision; 7 was never printed
    kept = readings.behind(named, "0.61", "rate: 0.61\nother: 0.5234")
    assert [a.reading for a in kept.alternatives] == ["empty lists match nothing", "same thing said twice"]
    assert kept.assumptions == ("nulls apply to all",)


@pytest.mark.parametrize("answer, alternative, same", [
    ("Delaware", "Delaware (share=0.9599, top=Philadelphia)", True),   # the same answer, with a remark
    ("No", "No []", True),
    ("60", "same sample, Age 60.0", True),                              # a line holding the number alone
    ("60", "sample S7, age 61", False),                                 # two numbers: not the same
    ("0.523", "0.199", False),
    ("West Virginia", "Delaware (share 0.96)", False),
    ("Gate Gaming, Delta, Falcon", "['Gate Gaming', 'Delta', 'Falcon']", True),  # a list, in another notation
    ("Delta, Falcon", "['Falcon', 'delta']", True),                              # in another order
    ("Delta, Falcon", "['Delta', 'Falcon', 'Cedar']", False),                    # with one more item
    ("1,937,041", "1937041", True),                                             # a number's commas are no list
])
def test_an_alternative_that_restates_the_answer_is_not_another_reading(answer, alternative, same):
    assert readings.same_answer(alternative, answer) is same


def test_a_script_that_prints_its_own_reading_lines_is_read_when_the_finalizer_names_none():
    output = "total: 300\nASSUMPTION: refunds count as sales\nALTERNATIVE: refunds subtracted => 250\n"
    kept = readings.behind(readings.Reading(), "300", output)
    assert kept.assumptions == ("refunds count as sales",)
    assert kept.alternatives == (readings.Alternative("refunds subtracted", "250"),)
