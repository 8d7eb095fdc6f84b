"""`dsstar ask --dry-run`, through the real entry point: the prompts a run sends first, unsent."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import SAMPLE_DATA, tree_bytes
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import dsstar


def schema() -> dict:
    return json.loads(dsstar("schema", cwd=SAMPLE_DATA.parent).stdout)


def files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def test_dry_run_prints_the_prompts_and_sends_nothing(tmp_path):
    before = tree_bytes(SAMPLE_DATA)
    with FakeOpenAIServer(respond) as server:
        proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--model", "openai/fake", "--api-base", server.base_url,
                      "--dry-run", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert server.requests == []  # Nothing reached the model's server.
    out = proc.stdout
    assert out.startswith("===== call 1 of 1: planner (first step), model openai/fake, 2 messages, ")
    assert out.index("----- system -----") < out.index("----- user -----")
    assert "You are the PLANNER of dsstar" in out and f"# Question\n{QUESTION}" in out
    assert "Net revenue counts **settled** transactions only" in out  # The documents, whole.
    for name in ("transactions.csv", "merchants.xlsx", "categories.json"):
        assert f"## {name} (" in out, name
    # The summary goes to stderr, the prompts alone to stdout.
    assert "dry run: nothing was sent" not in out
    assert "dry run: nothing was sent" in proc.stderr and "input cost    unpriced" in proc.stderr
    assert "estimate: litellm.token_counter" in proc.stderr and "4-6 calls per task" in proc.stderr
    # No run folder, no history entry, the data folder untouched; the description cache filled.
    assert files_under(tmp_path / "xdg-data") == []
    assert json.loads(dsstar("runs", "--json", cwd=tmp_path).stdout)["runs"] == []
    assert tree_bytes(SAMPLE_DATA) == before
    assert files_under(tmp_path / "xdg-cache" / "dsstar")


def test_the_dry_run_shows_exactly_what_a_real_run_sends_first_and_fills_its_cache(tmp_path):
    args = ("ask", str(SAMPLE_DATA), QUESTION, "--model", "openai/fake")
    with FakeOpenAIServer(respond) as server:
        dry = dsstar(*args, "--api-base", server.base_url, "--dry-run", "--json", cwd=tmp_path)
        assert dry.returncode == 0 and server.requests == []
        real = dsstar(*args, "--api-base", server.base_url, "--jsonl", cwd=tmp_path)
        assert real.returncode == 0, real.stderr
        first = server.requests[0]
    shown = json.loads(dry.stdout)["calls"]
    assert [call["role"] for call in shown] == ["planner"]
    assert shown[0]["messages"] == first["messages"]
    events = [json.loads(line) for line in real.stdout.splitlines()]
    done = next(e for e in events if e["event"] == "analysis_done")
    assert done["cached"] == done["files"] == 4  # The real run described nothing: the dry run had.


def test_dry_run_needs_no_api_key_and_its_json_validates(tmp_path):
    proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--model", "openai/gpt-4.1", "--dry-run", "--json",
                  cwd=tmp_path)  # No OPENAI_API_KEY: a real run would stop with exit 4.
    assert proc.returncode == 0, proc.stderr
    dry = json.loads(proc.stdout)
    jsonschema.validate(dry, schema())
    assert (dry["outcome"], dry["sent"], dry["model"], dry["question"]) == ("dry_run", False, "openai/gpt-4.1",
                                                                          QUESTION)
    assert dry["credentials_missing"] == ["OPENAI_API_KEY"] and dry["sandbox"] in ("strong", "medium", "basic")
    assert any("OPENAI_API_KEY" in note for note in dry["notes"])
    assert dry["token_count"] == {"method": "litellm.token_counter", "exact": True}  # gpt-4.1's own tokenizer.
    call = dry["calls"][0]
    chars = sum(len(m["content"]) for m in call["messages"])
    assert chars // 6 < call["input_tokens"] == dry["input_tokens"] < chars // 2
    assert 0 < dry["cost_usd"] == call["cost_usd"] < 0.05  # Priced by litellm's offline map.
    assert dry["messages"] == 2 and [m["role"] for m in call["messages"]] == ["system", "user"]
    assert {f["path"] for f in dry["files"] if f["in_prompt"]} == {"transactions.csv", "merchants.xlsx",
                                                                  "categories.json", "business_rules.md"}


def test_dry_run_without_any_model_still_shows_the_prompts(tmp_path):
    proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--dry-run", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    dry = json.loads(proc.stdout)
    jsonschema.validate(dry, schema())
    assert dry["model"] is None and dry["cost_usd"] is None and dry["token_count"]["exact"] is False
    assert any(note.startswith("no model configured") for note in dry["notes"])


@pytest.mark.parametrize("folder, question, model", [
    ("does-not-exist", "q?", "openai/x"),
    ("empty", "q?", "openai/x"),
    ("afile.csv", "q?", "openai/x"),
    (str(SAMPLE_DATA), "   ", "openai/x"),
    (str(SAMPLE_DATA), "q?", "nosuchprovider/model-x"),
])
def test_bad_input_fails_as_a_real_run_does(tmp_path, folder, question, model):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / ".hidden").write_text("x")
    (tmp_path / "afile.csv").write_text("a,b\n1,2\n")
    args = ("ask", folder, question, "--model", model)
    real, dry = dsstar(*args, cwd=tmp_path), dsstar(*args, "--dry-run", cwd=tmp_path)
    # The same error line and exit code (a real run may have printed its header first: its model
    # check runs once the header is out, see model_check.py).
    assert real.returncode in (2, 4, 6) and dry.returncode == real.returncode
    assert dry.stderr.strip().splitlines() == real.stderr.strip().splitlines()[-1:]
    assert dry.stdout == ""
    if folder == "does-not-exist":  # With --json: the error object, as a real run prints it.
        as_json = dsstar(*args, "--dry-run", "--json", cwd=tmp_path)
        error = json.loads(as_json.stdout)
        jsonschema.validate(error, schema())
        assert (as_json.returncode, error["outcome"], error["error"]["kind"]) == (6, "error", "data_folder")


def test_a_sandbox_requirement_this_machine_cannot_meet_fails_the_dry_run_as_a_real_run(tmp_path):
    (tmp_path / "dsstar.yaml").write_text("sandbox:\n  tier: basic\n  require: medium\n")
    args = ("ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1")
    real, dry = dsstar(*args, cwd=tmp_path), dsstar(*args, "--dry-run", cwd=tmp_path)
    assert real.returncode == dry.returncode == 4 and "sandbox.require is 'medium'" in dry.stderr
    assert dry.stderr.strip().splitlines() == real.stderr.strip().splitlines()[-1:] and dry.stdout == ""
    (tmp_path / "dsstar.yaml").write_text("sandbox:\n  tier: basic\n")
    shown = dsstar(*args, "--dry-run", cwd=tmp_path)
    assert shown.returncode == 0 and "sandbox       basic (the tier a real run's scripts get here)" in shown.stderr


def test_a_file_only_the_model_can_describe_shows_the_analyzer_call_and_is_not_cached(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "t.csv").write_text("a,b\n1,2\n")
    (data / "blob.sav").write_bytes(bytes(range(256)) * 2)
    args = ("ask", str(data), "What is in blob.sav?", "--model", "openai/fake", "--api-base", "http://127.0.0.1:9/v1",
            "--dry-run", "--json")
    first = json.loads(dsstar(*args, cwd=tmp_path).stdout)
    assert [(c["role"], c["about"]) for c in first["calls"]] == [("analyzer", "blob.sav"),
                                                                ("planner", "What is in blob.sav?")]
    assert "You are the ANALYZER of dsstar" in first["calls"][0]["messages"][0]["content"]
    again = json.loads(dsstar(*args, cwd=tmp_path).stdout)
    cached = {f["path"]: f["cached"] for f in again["files"]}
    assert cached == {"t.csv": True, "blob.sav": False}  # The placeholder is never cached.
    assert [c["role"] for c in again["calls"]] == ["analyzer", "planner"]


def test_batch_dry_run_shows_one_planner_call_per_question_still_to_ask(tmp_path):
    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "Which merchant is biggest?"}\n'
                                      '{"id": "b", "question": "How many transactions?", "guidelines": "integer"}\n')
    (tmp_path / "out.jsonl").write_text('{"id": "a", "answer": "Delta"}\n')
    out_before = (tmp_path / "out.jsonl").read_bytes()
    proc = dsstar("ask", str(SAMPLE_DATA), "--questions", "q.jsonl", "--out", "out.jsonl", "--model", "openai/x",
                  "--api-base", "http://127.0.0.1:9/v1", "--dry-run", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    dry = json.loads(proc.stdout)
    jsonschema.validate(dry, schema())
    assert dry["question"] is None
    assert dry["questions"] == [{"id": "b", "question": "How many transactions?", "guidelines": "integer"}]
    assert [(c["id"], c["role"]) for c in dry["calls"]] == [("b", "planner")]
    assert "# Answer format\ninteger" in dry["calls"][0]["messages"][0]["content"]
    assert (tmp_path / "out.jsonl").read_bytes() == out_before


def test_dry_run_and_jsonl_do_not_combine_and_quiet_drops_the_summary(tmp_path):
    both = dsstar("ask", str(SAMPLE_DATA), "q?", "--dry-run", "--jsonl", cwd=tmp_path)
    assert both.returncode == 2 and "--jsonl" in both.stderr and both.stdout == ""
    quiet = dsstar("ask", str(SAMPLE_DATA), "q?", "--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1",
                   "--dry-run", "-q", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "" and "----- user -----" in quiet.stdout


def test_ask_help_names_the_dry_run(tmp_path):
    proc = dsstar("ask", "-h", cwd=tmp_path, env_extra={"COLUMNS": "160"})
    assert proc.returncode == 0 and "--dry-run" in proc.stdout and "send nothing" in proc.stdout


def test_credentials_in_the_data_are_masked_in_what_the_dry_run_prints(tmp_path, sample_copy):
    secret = "sk-dry-run-do-not-leak-0123456789"
    with (sample_copy / "business_rules.md").open("a") as rules:
        rules.write(f"\nThe old key was {secret}.\n")
    args = ("ask", str(sample_copy), QUESTION, "--model", "anthropic/claude-sonnet-4-5", "--dry-run")
    env = {"OPENAI_API_KEY": secret}
    plain, as_json = dsstar(*args, cwd=tmp_path, env_extra=env), dsstar(*args, "--json", cwd=tmp_path, env_extra=env)
    assert plain.returncode == as_json.returncode == 0, plain.stderr
    assert "The old key was [REDACTED]." in plain.stdout
    assert secret not in plain.stdout + plain.stderr + as_json.stdout + as_json.stderr
    dry = json.loads(as_json.stdout)
    assert dry["credentials_missing"] == ["ANTHROPIC_API_KEY"] and dry["cost_usd"] > 0
    assert any("cache_control" in note for note in dry["notes"])
