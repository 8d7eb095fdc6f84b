"""Follow-up questions and the memory per folder (issue 24), as a user meets them: the CLI in a
subprocess, a scripted model behind a real OpenAI-compatible server on 127.0.0.1 whose requests are
counted, data the tests copy and change."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import sample_agent
from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION
from test_cli import dsstar
from dsstar_cli.memory.store import SCHEMA_VERSION

COUNT_QUESTION = "How many merchant categories does categories.json list?"
QUESTION_LINE = re.compile(r"# Question\n(.+)")
RECHECK = "run again on the current files"


def respond(role: str, messages: list[dict]) -> str:
    """The sample agent for the fraud question (its answer printed by a final script); for
    COUNT_QUESTION one step whose output holds the answer, copied by the finalizer (or, on a re-check,
    by the verifier) from the output."""
    question = QUESTION_LINE.search(messages[0]["content"]).group(1)
    if question != COUNT_QUESTION:
        return sample_agent.respond(role, messages)
    data = sample_agent._data_dir(messages)
    printed = re.search(r"categories: (\d+)", messages[-1]["content"])
    if role == "planner":
        return "Count the entries of the categories list in categories.json."
    if role == "coder":
        return (f"```python\nimport json\nrows = json.load(open('{data}/categories.json'))['categories']\n"
                "print(f'categories: {len(rows)}')\n```")
    if role == "verifier":
        return "Yes\nThe count is printed." + (f"\n```answer\n{printed.group(1)}\n```" if RECHECK in
                                                messages[-1]["content"] else "")
    if role == "finalizer":
        return f"```answer\n{printed.group(1)}\n```"
    return "Add Step"


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond) as running:
        yield running


@pytest.fixture
def data(tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(SAMPLE_DATA, target)
    return target


def ask(server, cwd: Path, data: Path, question: str, *flags: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """One `dsstar ask --json`, and the requests the model server got during it."""
    before = len(server.requests)
    proc = dsstar("ask", str(data), question, "--json", "--model", "openai/fake", "--api-base", server.base_url,
                  *flags, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc, server.requests[before:]


def result_of(proc: subprocess.CompletedProcess) -> dict:
    return json.loads(proc.stdout)


def memory_show(cwd: Path, data: Path) -> dict:
    proc = dsstar("memory", "show", str(data), "--json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def run_id(result: dict) -> str:
    return Path(result["run_dir"]).name


# -- answers from memory -----------------------------------------------------------------------

def test_the_same_question_again_on_an_unchanged_folder_makes_no_model_call(server, tmp_path, data):
    first, calls = ask(server, tmp_path, data, QUESTION)
    assert len(calls) == 8 and result_of(first)["from_memory"] is None
    # Asked again, spaced and cased differently: the same question.
    again, calls = ask(server, tmp_path, data, "  which merchant had the highest FRAUD rate in March 2025? ")
    assert calls == []
    result = result_of(again)
    assert (result["answer"], result["outcome"], result["exit_code"]) == ("Golden Gate Gaming", "verified", 0)
    assert result["from_memory"]["run"] == run_id(result_of(first)) and result["from_memory"]["rechecked"] is False
    assert result["from_memory"]["at"] and result["usage"]["total"]["calls"] == 0
    assert result["run_dir"] != result_of(first)["run_dir"]  # A run of its own, in the history,
    events = [json.loads(line)["event"] for line in open(Path(result["run_dir"]) / "events.jsonl")]
    assert events == ["run_started", "from_memory", "answer"]  # where nothing ran: no script, no analysis.
    listed = json.loads(dsstar("runs", "--json", cwd=tmp_path).stdout)["runs"]
    ids = [run["id"] for run in listed]
    assert ids.index(run_id(result)) < ids.index(run_id(result_of(first)))  # Newest first.
    # The plain output says where the answer came from, and when.
    plain = dsstar("ask", str(data), QUESTION, "--model", "openai/fake", "--api-base", server.base_url, cwd=tmp_path)
    assert plain.stdout == "Golden Gate Gaming\n"
    assert f"answered from memory: verified by run {run_id(result_of(first))} at {result['from_memory']['at']}" \
        in plain.stderr
    # Another answer format is another question.
    _, calls = ask(server, tmp_path, data, QUESTION, "--guidelines", "the merchant id")
    assert len(calls) == 8
    # --fresh: the full calls again, and the memory is not written either.
    fresh, calls = ask(server, tmp_path, data, QUESTION, "--fresh")
    assert len(calls) == 8 and result_of(fresh)["from_memory"] is None
    (entry,) = [e for e in memory_show(tmp_path, data)["entries"] if not e["guidelines"]]
    assert entry["run"] == run_id(result_of(first))
    # A copy of the folder is another folder: its own memory (empty).
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)
    _, calls = ask(server, tmp_path, copy, QUESTION)
    assert len(calls) == 8


def highest_fraud_merchant_after_change(data: Path) -> str:
    """Make M01 the merchant with the highest March fraud rate; return its name."""
    with open(data / "transactions.csv", "a", encoding="utf-8") as csv:
        for i in range(400):
            csv.write(f"TX{i:05d},2025-03-15 12:00:00,M01,10.0,EUR,FR,settled,1\n")
    merchants = pd.read_excel(data / "merchants.xlsx", sheet_name="merchants").set_index("merchant_id")
    return merchants.loc["M01", "merchant_name"]


def test_a_changed_file_re_runs_the_remembered_script_and_asks_only_the_verifier(server, tmp_path, data):
    first, _ = ask(server, tmp_path, data, QUESTION)
    expected = highest_fraud_merchant_after_change(data)
    assert expected != "Golden Gate Gaming"
    again, calls = ask(server, tmp_path, data, QUESTION)
    assert [sample_agent_role(c) for c in calls] == ["verifier"]
    assert RECHECK in calls[0]["messages"][-1]["content"]
    result = result_of(again)
    # The answer is the final script's, run again on the changed file: computed, not remembered.
    assert (result["answer"], result["outcome"], result["answer_from"]) == (expected, "verified", "final_script")
    assert result["from_memory"] == {"run": run_id(result_of(first)), "at": result["from_memory"]["at"],
                                     "rechecked": True, "changed": ["transactions.csv"]}
    # The re-checked answer is remembered in turn: asked once more, no call at all.
    third, calls = ask(server, tmp_path, data, QUESTION)
    assert calls == [] and result_of(third)["answer"] == expected
    assert result_of(third)["from_memory"]["run"] == run_id(result)


def test_an_answer_copied_from_the_output_is_re_checked_with_the_verifier_carrying_it(server, tmp_path, data):
    first, calls = ask(server, tmp_path, data, COUNT_QUESTION)
    assert result_of(first)["answer"] == "8" and result_of(first)["answer_from"] == "solution_output"
    categories = json.loads((data / "categories.json").read_text())
    categories["categories"].append({"mcc": 1, "name": "New", "risk_level": "low", "fee_rate_pct": 1.0})
    (data / "categories.json").write_text(json.dumps(categories))
    again, calls = ask(server, tmp_path, data, COUNT_QUESTION)
    assert [sample_agent_role(c) for c in calls] == ["verifier"]
    assert result_of(again)["answer"] == "9" and result_of(again)["from_memory"]["rechecked"] is True


def test_when_the_verifier_rejects_the_re_run_a_full_run_follows(tmp_path, data):
    def doubtful(role: str, messages: list[dict]) -> str:
        if role == "verifier" and RECHECK in messages[-1]["content"]:
            return "No\nThe new rows look wrong."
        return respond(role, messages)

    with FakeOpenAIServer(doubtful) as server:
        ask(server, tmp_path, data, QUESTION)
        expected = highest_fraud_merchant_after_change(data)
        again, calls = ask(server, tmp_path, data, QUESTION)
    assert len(calls) == 1 + 8 and result_of(again)["from_memory"] is None
    assert result_of(again)["answer"] == expected


def sample_agent_role(request: dict) -> str:
    from fake_openai import role_of

    return role_of(request["messages"])


# -- memory show / clear ---------------------------------------------------------------------

def test_memory_show_marks_stale_the_entries_that_read_a_changed_file_and_clear_empties_it(server, tmp_path, data):
    ask(server, tmp_path, data, QUESTION)
    ask(server, tmp_path, data, COUNT_QUESTION)
    shown = memory_show(tmp_path, data)
    entries = {e["question"]: e for e in shown["entries"]}
    assert sorted(entries[QUESTION]["files"]) == ["merchants.xlsx", "transactions.csv"]
    assert entries[COUNT_QUESTION]["files"] == ["categories.json"]
    assert not any(e["stale"] for e in entries.values())
    highest_fraud_merchant_after_change(data)
    entries = {e["question"]: e for e in memory_show(tmp_path, data)["entries"]}
    assert (entries[QUESTION]["stale"], entries[QUESTION]["changed"]) == (True, ["transactions.csv"])
    assert (entries[COUNT_QUESTION]["stale"], entries[COUNT_QUESTION]["changed"]) == (False, [])
    text = dsstar("memory", "show", str(data), cwd=tmp_path).stdout
    assert ": 2 answer(s), " in text and "STALE: changed transactions.csv" in text

    shown = memory_show(tmp_path, data)
    kept = len(shown["entries"]) + len(shown["functions"]) + len(shown["conventions"])
    cleared = dsstar("memory", "clear", str(data), "--json", cwd=tmp_path)
    assert cleared.returncode == 0 and json.loads(cleared.stdout)["cleared"] == kept >= 2
    shown = memory_show(tmp_path, data)
    assert shown["entries"] == shown["functions"] == shown["conventions"] == []


def test_the_memory_folder_is_private_and_never_inside_the_data_folder(server, tmp_path, data):
    before = sorted(p.name for p in data.rglob("*"))
    ask(server, tmp_path, data, COUNT_QUESTION)
    folder = tmp_path / "xdg-data" / "dsstar" / "memory"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "memory.db").stat().st_mode) == 0o600
    assert sorted(p.name for p in data.rglob("*")) == before
    # The memory folder inside the data folder: refused, the run goes on without it.
    inner = tmp_path / "inner"
    shutil.copytree(data, inner)
    proc = dsstar("ask", str(inner), COUNT_QUESTION, "--json", "--model", "openai/fake", "--api-base",
                  server.base_url, cwd=tmp_path, env_extra={"XDG_DATA_HOME": str(inner / "xdg"),
                                                            "DSSTAR_RUN_DIR": str(tmp_path / "runs")})
    assert proc.returncode == 0 and result_of(proc)["answer"] == "8"
    assert not (inner / "xdg" / "dsstar" / "memory").exists()


def test_an_entry_never_makes_dsstar_read_outside_the_data_folder(server, tmp_path, data):
    """A FIFO outside the folder blocks whoever opens it: an entry naming it (by `..` or through a link
    planted in the folder since) must be reported stale without being opened."""
    from dsstar_cli.memory.fingerprint import Fingerprint
    from dsstar_cli.memory.store import Entry, Store

    fifo = tmp_path / "outside.fifo"
    os.mkfifo(fifo)
    (data / "link.json").symlink_to(fifo)
    planted = [Fingerprint(path, 0, 0, "x", False) for path in ("../outside.fifo", "link.json", str(fifo))]
    store = Store(tmp_path / "xdg-data" / "dsstar" / "memory")
    store.put(Entry(0, str(data.resolve()), COUNT_QUESTION, None, "run", "now", "8", "solution_output", "print(8)", "",
                    {"plan": []}, planted), COUNT_QUESTION.lower(), "")
    store.close()
    (entry,) = memory_show(tmp_path, data)["entries"]  # Times out (120 s) if the FIFO is opened.
    assert entry["stale"] and sorted(entry["changed"]) == sorted(["../outside.fifo", "link.json", str(fifo)])


# -- two processes at once -------------------------------------------------------------------

WRITER = """
import sys, time
from pathlib import Path
from dsstar_cli.memory.store import Entry, Store
folder, tag, start, count = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
while time.time() < start:  # Both processes begin together.
    time.sleep(0.001)
for i in range(count):  # A connection each time, as separate dsstar runs would.
    store = Store(Path(folder))
    store.put(Entry(0, "/data", f"{tag} {i}", None, "run", "now", "42", "final_script", "print(42)", "print(42)",
                    {"plan": []}), f"{tag} {i}", "")
    store.close()
"""


def test_two_processes_writing_the_memory_at_once_both_land(tmp_path):
    folder = tmp_path / "memory"
    start = time.time() + 3.0
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(folder), tag, str(start), "40"],
                                stderr=subprocess.PIPE, text=True) for tag in ("a", "b")]
    errors = [writer.communicate(timeout=120)[1] for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0], errors
    from dsstar_cli.memory.store import Store

    store = Store(folder)
    questions = {entry.question for entry in store.entries("/data")}
    store.close()
    assert questions == {f"{tag} {i}" for tag in "ab" for i in range(40)}


# -- follow-ups ------------------------------------------------------------------------------

def test_a_follow_up_carries_the_previous_run_only_and_runs_show_shows_the_chain(server, tmp_path, data):
    first, _ = ask(server, tmp_path, data, COUNT_QUESTION)
    second, calls = ask(server, tmp_path, data, QUESTION, "-c")
    assert len(memory_show(tmp_path, data)["entries"]) == 1  # A follow-up is not remembered: its question
    earlier = result_of(first)                                 # means something only after the other.
    # Its first prompts (planner, coder) hold the earlier question, plan, script and answer, quoted.
    assert [sample_agent_role(c) for c in calls[:2]] == ["planner", "coder"] and len(calls) == 8
    for prompt in (calls[0]["messages"], calls[1]["messages"]):
        context = prompt[0]["content"]
        block = context[context.index("# Earlier question"):context.index("# Question")]
        assert f"<<<quoted data: the earlier run {run_id(earlier)}" in block and ">>>end of quoted data" in block
        assert f"Question: {COUNT_QUESTION}" in block and "Answer: 8" in block
        assert "print(f'categories: {len(rows)}')" in block  # Its script.
        assert "1. Count the entries of the categories list" in block  # Its plan.
    assert result_of(second)["follows"] == run_id(earlier) and result_of(second)["from_memory"] is None
    # A chain carries the previous run, and only a line of the questions before it.
    third, calls = ask(server, tmp_path, data, "And in April?", "--follow", run_id(result_of(second)))
    context = calls[0]["messages"][0]["content"]
    assert f"the earlier run {run_id(result_of(second))}" in context and "Answer: Golden Gate Gaming" in context
    assert f'Asked before it, oldest first: "{COUNT_QUESTION}"' in context
    block = context[context.index("# Earlier question"):context.index("# Question")]
    assert run_id(earlier) not in block and "categories: {len(rows)}" not in block
    shown = dsstar("runs", "show", run_id(result_of(third)), "--json", cwd=tmp_path)
    chain = json.loads(shown.stdout)["chain"]
    assert [link["id"] for link in chain] == [run_id(earlier), run_id(result_of(second))]
    assert json.loads(shown.stdout)["result"]["follows"] == run_id(result_of(second))
    text = dsstar("runs", "show", run_id(result_of(third)), cwd=tmp_path).stdout
    assert f"earlier run {run_id(earlier)}: {COUNT_QUESTION} -> 8" in text
    assert f"follows run {run_id(result_of(second))}: {QUESTION}" in text
    # A run on another folder cannot be followed.
    other = tmp_path / "other"
    shutil.copytree(data, other)
    elsewhere = dsstar("ask", str(other), "And April?", "--follow", run_id(earlier), "--model", "openai/fake",
                       "--api-base", server.base_url, cwd=tmp_path)
    assert elsewhere.returncode == 2 and "a follow-up asks the same folder" in elsewhere.stderr


def test_follow_ups_refuse_what_they_cannot_follow(server, tmp_path, data):
    nothing = dsstar("ask", str(data), "And April?", "-c", "--model", "openai/fake", "--api-base", server.base_url,
                     cwd=tmp_path)
    assert nothing.returncode == 2 and "no finished run on" in nothing.stderr
    both = dsstar("ask", str(data), "x", "-c", "--follow", "x", cwd=tmp_path)
    assert both.returncode == 2 and "choose one of --continue and --follow" in both.stderr


# -- fingerprints ----------------------------------------------------------------------------

def test_a_fingerprint_sees_an_edit_and_ignores_a_touch(tmp_path):
    from dsstar_cli.memory import fingerprint

    small = tmp_path / "small.csv"
    small.write_text("a,b\n1,2\n")
    before = fingerprint.take(tmp_path, "small.csv")
    os.utime(small, ns=(before.mtime_ns + 10**9, before.mtime_ns + 10**9))  # The same bytes, a new mtime.
    assert fingerprint.unchanged(before, fingerprint.take(tmp_path, "small.csv"))
    small.write_text("a,b\n1,3\n")  # The same size, other bytes.
    os.utime(small, ns=(before.mtime_ns, before.mtime_ns))
    assert not fingerprint.unchanged(before, fingerprint.take(tmp_path, "small.csv"))


def test_a_big_file_is_hashed_from_slices_and_its_mtime_counts(tmp_path):
    from dsstar_cli.memory import fingerprint

    big = tmp_path / "big.bin"
    with open(big, "wb") as out:
        out.truncate(fingerprint.FULL_HASH_BYTES + 8 * 1024 * 1024)  # Sparse: no disk used.
    before = fingerprint.take(tmp_path, "big.bin")
    assert before.sampled and before.hash.startswith("s:")
    with open(big, "r+b") as out:  # An edit at the very end: in a slice, caught by the hash.
        out.seek(-1, os.SEEK_END)
        out.write(b"x")
    os.utime(big, ns=(before.mtime_ns, before.mtime_ns))
    assert not fingerprint.unchanged(before, fingerprint.take(tmp_path, "big.bin"))
    with open(big, "r+b") as out:  # Back as it was; then touched: a sampled hash trusts the mtime too.
        out.seek(-1, os.SEEK_END)
        out.write(b"\0")
    os.utime(big, ns=(before.mtime_ns, before.mtime_ns))
    assert fingerprint.unchanged(before, fingerprint.take(tmp_path, "big.bin"))
    os.utime(big, ns=(before.mtime_ns + 1, before.mtime_ns + 1))
    assert not fingerprint.unchanged(before, fingerprint.take(tmp_path, "big.bin"))


def test_a_memory_from_a_newer_dsstar_is_left_alone(tmp_path, monkeypatch):
    import sqlite3

    folder = tmp_path / "xdg-data" / "dsstar" / "memory"
    folder.mkdir(parents=True, mode=0o700)
    db = sqlite3.connect(folder / "memory.db")
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    db.execute("INSERT INTO schema_version VALUES (99)")
    db.commit()
    db.close()
    proc = dsstar("memory", "show", str(SAMPLE_DATA), cwd=tmp_path)
    assert proc.returncode == 1 and f"written by a newer dsstar (schema 99, this one knows {SCHEMA_VERSION})" in proc.stderr
    from dsstar_cli.memory import Recall

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    recall = Recall.open(SAMPLE_DATA, QUESTION, None)
    assert recall.store is None and recall.at_once() is None  # The run goes on without the memory.


def test_the_live_view_says_the_answer_came_from_memory(tmp_path, data, monkeypatch):
    """A remembered entry (planted with the files' real fingerprints), asked on a terminal of 80 columns:
    the live view names the run and the time; no model is configured, none is needed."""
    from test_terminal import run_in_terminal, terminal_env

    from dsstar_cli.memory import fingerprint
    from dsstar_cli.memory.recall import normalise
    from dsstar_cli.memory.store import Entry, Store

    prints = [fingerprint.take(data, path) for path in ("transactions.csv", "merchants.xlsx")]
    store = Store(tmp_path / "xdg-data" / "dsstar" / "memory")
    store.put(Entry(0, str(data.resolve()), QUESTION, None, "20261126-010616-67cfdc", "2026-11-26T01:06:29",
                    "Golden Gate Gaming", "final_script", "print(1)", "print('Golden Gate Gaming')", {"plan": ["x"]},
                    prints), normalise(QUESTION), "")
    store.close()
    env = terminal_env(tmp_path)
    shown = run_in_terminal([sys.executable, "-m", "dsstar_cli", "ask", str(data), QUESTION], tmp_path, env)
    flat = " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown).split())
    assert "answered from memory: verified by run 20261126-010616-67cfdc at 2026-11-26T01:06:29" in flat, shown
    assert "Golden Gate Gaming" in flat and "verified answer" in flat
