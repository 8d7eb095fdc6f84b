"""What a folder's verified runs establish, offered to its later runs (issue 24): the functions of
verified scripts (imported in the sandbox as `remembered`) and the conventions they settled.

The harvest is pure syntax and is tested as such; the rest as a user meets it: the CLI in a
subprocess, a scripted model behind a real OpenAI-compatible server on 127.0.0.1, data the tests
copy and change, and scripts that really import the module in the sandbox of every tier."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer, role_of
from dsstar_cli.memory import knowledge
from dsstar_cli.memory.functions import harvest, module_source
from dsstar_cli.memory.store import FUNCTION, Learned
from dsstar_cli.roles.verifier import COPY_ANSWER
from dsstar_cli.sandbox import Executor, tiers
from test_cli import dsstar
from test_folder_memory import ask as ask_json, memory_show, result_of, run_id

# -- the harvest: which functions stand on their own -----------------------------------------------

SCRIPT = '''
import json, os
import pandas as pd
DATA_DIR = "/data/x"
FEES = os.path.join(DATA_DIR, "fees.json")
CAP = 3
counter = 0
df = pd.DataFrame({"a": [1]})

def load_fees(path=FEES):
    """Fee rules, one dict per rule."""
    # A comment the lifted copy may lose: FEES is written in.
    return json.load(open(path))

def applies(field, value):
    """True when a rule's list field applies to value (empty or null: every value)."""
    return not field or value in field

def first_rules(value, rules):
    """The first CAP rules whose account_type applies to value."""
    return [r for r in rules if applies(r.get("account_type"), value)][:CAP]

def shape():
    """Uses a variable the script computed: left out."""
    return df.shape

def bump():
    """Changes the script's state: left out."""
    global counter
    counter += 1

def undocumented(x):
    return x

def main():
    """The script's own entry point: left out."""
    print(first_rules("R", load_fees()))
'''


def test_only_functions_that_stand_on_their_own_are_harvested():
    found = {f.name: f for f in harvest(SCRIPT)}
    assert list(found) == ["load_fees", "applies", "first_rules"]
    assert found["load_fees"].doc == "Fee rules, one dict per rule."
    assert found["load_fees"].imports == ["import json", "import os"]  # os: the constant written in needs it
    assert "os.path.join('/data/x', 'fees.json')" in found["load_fees"].source
    assert found["first_rules"].calls == ["applies"] and "[:3]" in found["first_rules"].source
    assert found["applies"].source.startswith("def applies(field, value):")  # Unchanged: nothing written in.
    assert harvest("def broken(:\n") == [] and harvest("x = 1\n") == []


def test_the_module_runs_the_functions_as_the_script_did(tmp_path):
    (tmp_path / "fees.json").write_text(json.dumps([{"account_type": []}, {"account_type": ["H"]},
                                                    {"account_type": ["R"]}, {"account_type": None}]))
    module = module_source(harvest(SCRIPT.replace("/data/x", str(tmp_path))), "test")
    space: dict = {}
    exec(compile(module, "remembered.py", "exec"), space)  # noqa: S102 - our own harvested test code
    assert space["first_rules"]("R", space["load_fees"]()) == [{"account_type": []}, {"account_type": ["R"]},
                                                                {"account_type": None}]
    assert "shape" not in space and "counter" not in space and "df" not in space


def test_a_function_using_one_kept_before_calls_it_from_the_module_never_imports_it():
    code = ("from remembered import msa_key, load_x as lx\n"
            "def join(a, b):\n    \"\"\"Join on the key.\"\"\"\n    return a.assign(k=a.name.map(msa_key)).merge(b, on='k')\n"
            "def other(a):\n    \"\"\"Calls an alias: left out.\"\"\"\n    return lx(a)\n")
    (join,) = harvest(code)
    assert (join.name, join.imports, join.calls) == ("join", [], ["msa_key"])  # Never `from remembered import`.


def learned(kind: str, run: str, question: str, **body) -> Learned:
    return Learned(kind, body.get("name", body.get("text", "")), body, run, "now", question)


def test_the_prompt_names_the_runs_closest_to_the_question_with_long_defaults_elided():
    offer = knowledge.Offer(functions=[
        learned(FUNCTION, "r1", "Total fraud losses by payment method?", name="load_payments",
                signature="load_payments(path=os.path.join('/a/long/folder', 'payments.csv'), n=3)",
                doc="The payment-method block."),
        learned(FUNCTION, "r2", "Median age of the patients?", name="load_meta", signature="load_meta()",
                doc="The clinical table.")],
        conventions=[learned("convention", "r3", "Which payment method lost most?", text="losses in millions")])
    block = offer.block("Which payment method had the highest fraud losses?")
    assert "Run r1 asked 'Total fraud losses by payment method?'" in block and "Run r3" in block
    assert "function load_payments(path=..., n=3): The payment-method block." in block
    assert block.index("Run r1") < block.index("Run r3")  # r1 shares more of the question's terms.
    assert "r2" not in block and "load_meta" not in block  # Nothing in common with the question.
    assert offer.block("Which genes are amplified?") == ""


# -- the module in the sandbox, every tier ---------------------------------------------------------

@pytest.fixture(params=["strong", "medium", "basic"])
def executor(request, tmp_path):
    if not tiers.probe().available.get(request.param):
        pytest.skip(f"no {request.param} tier here: {tiers.probe().details.get(request.param)}")
    data = tmp_path / "data"
    data.mkdir()
    (data / "fees.json").write_text(json.dumps([{"account_type": ["R"]}, {"account_type": []}]))
    running = Executor(tmp_path / "run" / "work", data, timeout_s=120, tier=request.param)
    yield running
    running.close()


def test_a_script_imports_the_remembered_functions_in_every_tier_and_reads_nothing_else_of_the_memory(
        executor, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    from dsstar_cli.memory.store import Store
    store = Store.for_folder(executor.data_dir)  # The real memory folder: 0700, out of the scripts' reach.
    store.close()
    functions = harvest(SCRIPT.replace("/data/x", str(executor.data_dir)))
    offered = knowledge.Offer(functions=[Learned(FUNCTION, f.name, f.as_dict(), "run-1", "now", "q") for f in functions])
    offered.install(executor.workdir)
    database = tmp_path / "xdg-data" / "dsstar" / "memory" / "memory.db"
    result = executor.run(f"from remembered import first_rules, load_fees\nprint(first_rules('R', load_fees()))\n"
                          f"try:\n    open({str(database)!r}, 'rb').read(1)\n    print('memory: read')\n"
                          f"except OSError as exc:\n    print('memory:', type(exc).__name__)\n", "uses")
    assert result.ok, result.stderr
    assert "[{'account_type': ['R']}, {'account_type': []}]" in result.stdout
    confined = executor.tier != "basic" or executor.uid is not None  # basic as a user of its own reads what they can
    if confined:
        assert "memory: read" not in result.stdout, result.stdout


# -- through the CLI ---------------------------------------------------------------------------------

SETTLED = "How many transactions were settled?"
MARCH = "How many settled transactions were there in March 2025?"
ALL = "How many transactions are there?"
QUESTION_LINE = re.compile(r"# Question\n(.+)")
CONVENTION = "settled means status == 'settled' (refunds and chargebacks are not)"

DEFINING = '''```python
import pandas as pd
DATA_DIR = "{data}"
TX = DATA_DIR + "/transactions.csv"

def load_transactions(path=TX):
    """transactions.csv with its timestamps parsed."""
    return pd.read_csv(path, parse_dates=["timestamp"])

def settled(tx):
    """The settled transactions only (the rules' revenue basis)."""
    return tx[tx["status"] == "settled"]

print(f"count: {{len(settled(load_transactions()))}}")
print("ASSUMPTION: {convention}")
```'''

STRICT = "How many settled transactions were there in March 2025, counted strictly?"
SHORT_PLAN = "Count the settled transactions of March 2025 with the remembered loader and filter."
IMPORTING = {
    MARCH: f'''```python
# Plan: {SHORT_PLAN}
from remembered import load_transactions, settled
tx = settled(load_transactions())
print(f"count: {{len(tx[(tx.timestamp.dt.year == 2025) & (tx.timestamp.dt.month == 3)])}}")
```''',
    ALL: '''```python
from remembered import load_transactions
print(f"count: {len(load_transactions())}")
```''',
}
ALONE = '''```python
import pandas as pd
print(f"count: {{len(pd.read_csv('{data}/transactions.csv'))}}")
```'''


def respond(role: str, messages: list[dict]) -> str:
    question = QUESTION_LINE.search(messages[0]["content"]).group(1)
    data = re.search(r'DATA_DIR = "([^"]+)"', messages[0]["content"]).group(1)
    printed = re.search(r"count: (\d+)", messages[-1]["content"])
    if role == "planner":
        return "Count the transactions the question asks about."
    if role == "coder":
        if question == SETTLED:
            return DEFINING.format(data=data, convention=CONVENTION)
        offered = "- function load_transactions(" in messages[0]["content"]
        return IMPORTING.get(question, IMPORTING[MARCH]) if offered else ALONE.format(data=data)
    if role == "verifier":
        if COPY_ANSWER in messages[-1]["content"]:  # The short round (memory/shortcut.py).
            if question == STRICT:
                return "No\nThe plan counts refunds made later in the month; strictly they are out."
            return f"Yes\nThe count is printed.\n```answer\n{printed.group(1)}\n```"
        return "Yes\nThe count is printed."
    if role == "finalizer":
        return f"```answer\n{printed.group(1)}\n```"
    return "Add Step"


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond) as running:
        yield running


def ask(server, cwd: Path, data: Path, question: str, *flags: str) -> tuple[dict, list[dict]]:
    proc, calls = ask_json(server, cwd, data, question, *flags)
    return result_of(proc), calls


def events(result: dict, kind: str) -> list[dict]:
    lines = [json.loads(line) for line in open(Path(result["run_dir"]) / "events.jsonl")]
    return [line for line in lines if line["event"] == kind]


def transactions(data: Path) -> pd.DataFrame:
    return pd.read_csv(data / "transactions.csv", parse_dates=["timestamp"])


def test_a_later_question_imports_what_a_verified_run_left_and_a_changed_file_rechecks_it(server, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DATA, data)
    first, _ = ask(server, tmp_path, data, SETTLED)
    assert first["outcome"] == "verified" and not first["ambiguous"]
    shown = memory_show(tmp_path, data)
    assert [f["name"] for f in shown["functions"]] == ["load_transactions", "settled"]
    assert [c["text"] for c in shown["conventions"]] == [CONVENTION]
    assert shown["functions"][0]["run"] == run_id(first) and shown["functions"][0]["question"] == SETTLED

    # Another question: its prompts name the functions and the convention, with the run they came from,
    # and its script imports them in the sandbox. The memory covers it: the short round, two calls.
    second, calls = ask(server, tmp_path, data, MARCH)
    assert [role_of(c["messages"]) for c in calls] == ["coder", "verifier"]
    assert (second["rounds"], second["plan"], second["answer_from"]) == (1, [SHORT_PLAN], "solution_output")
    prompt = calls[0]["messages"][0]["content"]
    assert "load_transactions(path=" in prompt and "transactions.csv with its timestamps parsed." in prompt
    assert CONVENTION in prompt and f"Run {run_id(first)} asked {SETTLED!r}" in prompt and f"{SETTLED!r} => " in prompt
    tx = transactions(data)
    march = tx[(tx.status == "settled") & (tx.timestamp.dt.month == 3)]
    assert (second["answer"], second["outcome"]) == (str(len(march)), "verified")
    (offered,) = events(second, "memory_offered")
    assert offered["functions"] == ["load_transactions", "settled"] and offered["rechecked"] == []
    judged = [c for c in calls if role_of(c["messages"]) == "verifier"]
    assert judged and all("# This folder's memory" not in c["messages"][0]["content"] for c in judged)

    # A file they read changes: the functions' script re-runs first (no model call) and they are offered
    # again; the convention and the answers rest on the old file and are not.
    with open(data / "transactions.csv", "a", encoding="utf-8") as csv:
        csv.write("TX99999,2025-03-15 12:00:00,M01,10.0,EUR,FR,settled,0\n")
    assert memory_show(tmp_path, data)["functions"][0]["stale"]
    third, calls = ask(server, tmp_path, data, ALL)
    (offered,) = events(third, "memory_offered")
    assert offered["rechecked"] == [run_id(first)] and offered["functions"] == ["load_transactions", "settled"]
    assert [c["purpose"] for c in events(third, "code")][0] == "memory-check"
    assert CONVENTION not in calls[0]["messages"][0]["content"]
    assert third["answer"] == str(len(transactions(data)))
    assert not memory_show(tmp_path, data)["functions"][0]["stale"]  # They rest on the new file now.

    # The file changes so that their script fails: they are forgotten, not offered.
    transactions(data).drop(columns=["status"]).to_csv(data / "transactions.csv", index=False)
    fourth, calls = ask(server, tmp_path, data, ALL, "--fresh")  # (--fresh: the memory is not even read)
    assert events(fourth, "memory_offered") == [] and "- function" not in calls[0]["messages"][0]["content"]
    fifth, calls = ask(server, tmp_path, data, MARCH.replace("March", "the month of March"))
    (offered,) = events(fifth, "memory_offered")
    assert offered["forgotten"] == ["load_transactions", "settled"] and offered["functions"] == []
    assert "- function" not in calls[0]["messages"][0]["content"]
    assert memory_show(tmp_path, data)["functions"] == []


def test_a_follow_up_is_offered_the_memory_but_never_answered_from_it(server, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DATA, data)
    ask(server, tmp_path, data, SETTLED)
    follow, calls = ask(server, tmp_path, data, ALL, "-c")
    assert follow["follows"] and follow["from_memory"] is None and calls
    assert "load_transactions(path=" in calls[0]["messages"][0]["content"]
    assert follow["answer"] == str(len(transactions(data)))


def test_a_short_round_short_of_a_verified_answer_hands_on_to_the_loop_and_the_setting_turns_it_off(server, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DATA, data)
    ask(server, tmp_path, data, SETTLED)
    result, calls = ask(server, tmp_path, data, STRICT)
    # The short round's No goes to the router and the planner as after any round: nothing is redone.
    assert [role_of(c["messages"]) for c in calls] == ["coder", "verifier", "router", "planner", "coder", "verifier",
                                                       "finalizer"]
    assert "refunds made later in the month" in calls[2]["messages"][-1]["content"]
    assert (result["outcome"], result["rounds"], result["plan"][0]) == ("verified", 2, SHORT_PLAN)
    (handed,) = events(result, "shortcut_handed_on")
    assert handed["verified"] is False and events(result, "resumed") == []
    # memory.shortcut: false (here DSSTAR_MEMORY_SHORTCUT): the memory is offered, the loop runs as ever.
    before = len(server.requests)
    proc = dsstar("ask", str(data), MARCH, "--json", "--model", "openai/fake", "--api-base", server.base_url,
                  cwd=tmp_path, env_extra={"DSSTAR_MEMORY_SHORTCUT": "false"})
    assert proc.returncode == 0, proc.stderr
    assert [role_of(r["messages"]) for r in server.requests[before:]] == ["planner", "coder", "verifier", "finalizer"]
