"""The DS-STAR loop with a scripted model: each path of the algorithm, asserted on events and result."""

from __future__ import annotations

import re

import io
from pathlib import Path


from conftest import tree_bytes
from dsstar_cli.events import Recorder
from dsstar_cli.model import ModelUnreachable, Models, ScriptedModel
from dsstar_cli.result import ExitCode
from dsstar_cli.runner import AskRequest, ask


def py(code: str) -> str:
    return f"```python\n{code}\n```"


def run(script, config, data: Path, question="How many transactions?", guidelines=None):
    model = ScriptedModel(script)
    recorder = Recorder()
    result = ask(AskRequest(data, question, guidelines), config, recorder, models=Models(model))
    return result, recorder, model


def count_rows(data: Path) -> str:
    return py(f"import pandas as pd\nprint('rows:', len(pd.read_csv(r'{data}/transactions.csv')))")


def test_verified_in_the_first_round(config, sample_copy):
    result, rec, model = run({
        "planner": ["Count the rows of transactions.csv."],
        "coder": [count_rows(sample_copy)],
        "verifier": ["Yes, the count is printed."],
        "finalizer": [py("print(3000)")],
    }, config, sample_copy)
    assert (result.outcome, result.answer, result.rounds, result.verified) == ("verified", "3000", 1, True)
    assert result.exit_code() == ExitCode.VERIFIED
    assert [role for role, _ in model.calls] == ["planner", "coder", "verifier", "finalizer"]
    assert rec.of("execution")[0]["stdout"].strip() == "rows: 3000"
    assert "route" not in rec.kinds()
    assert [e["purpose"] for e in rec.of("execution")] == ["solution", "final"]  # The finalizer's script ran,
    assert result.answer_from == "final_script" and result.final_code == "print(3000)\n"  # and is kept.
    assert "answered_from_output" not in rec.kinds()
    # The finalizer sees the plan beside the script and its output: it says which printed value was meant.
    finalizer_prompt = model.calls[-1][1][-1]["content"]
    assert "# The plan\n1. Count the rows of transactions.csv." in finalizer_prompt
    assert "rows: 3000" in finalizer_prompt


def test_add_step_extends_the_plan_and_the_coder_gets_the_base_code(config, sample_copy):
    first, second = count_rows(sample_copy), py("print('second script')")
    result, rec, model = run({
        "planner": ["Load transactions.csv.", "Count the rows."],
        "coder": [first, second],
        "verifier": ["No", "Yes"],
        "router": ["Add Step"],
        "finalizer": [py("print(3000)")],
    }, config, sample_copy)
    assert result.outcome == "verified" and result.rounds == 2
    assert result.plan == ["Load transactions.csv.", "Count the rows."]
    assert result.history == [{"round": 2, "action": "add", "step": None, "dropped": [], "fallback": False}]
    second_coder_prompt = [m for role, m in model.calls if role == "coder"][1][-1]["content"]
    assert "already implements steps 1-1" in second_coder_prompt and "rows:" in second_coder_prompt


def test_the_verifiers_reason_reaches_the_event_the_router_and_the_planner(config, sample_copy):
    why = "The output gives the total cost, but the question asks for the cost per acre."
    result, rec, model = run({
        "planner": ["Load transactions.csv.", "Divide by the acres."],
        "coder": [count_rows(sample_copy), py("print('per acre: 3')")],
        "verifier": [f"No\n{why}", "Yes. It prints the cost per acre."],
        "router": ["Add Step"],
        "finalizer": [py("print(3)")],
    }, config, sample_copy)
    assert result.outcome == "verified"
    assert [v["reason"] for v in rec.of("verdict")] == [why, "It prints the cost per acre."]
    router_prompt = [m for role, m in model.calls if role == "router"][0][-1]["content"]
    planner_prompt = [m for role, m in model.calls if role == "planner"][1][-1]["content"]
    assert f"# Why the verifier said No\n{why}" in router_prompt and why in planner_prompt
    assert "Why the router" not in planner_prompt  # A bare "Add Step" gives the planner nothing more.


def test_every_call_of_a_run_starts_with_the_same_context(config, sample_copy):
    """The shared context is a stable prefix (prompt caching): the documents in full before the
    tables, identical in every call; the verifier's and finalizer's is a prefix of the others'."""
    result, _, model = run({
        "planner": ["Load transactions.csv.", "Count the rows."],
        "coder": [count_rows(sample_copy), count_rows(sample_copy)],
        "verifier": ["No", "Yes"],
        "router": ["Add Step"],
        "finalizer": [py("print(3000)")],
    }, config, sample_copy)
    assert result.outcome == "verified"
    systems = {role: {m[0]["content"] for r, m in model.calls if r == role} for role, _ in model.calls}
    full, = systems["planner"] | systems["coder"] | systems["router"]  # One text for these roles,
    checking, = systems["verifier"] | systems["finalizer"]             # and one for these (same script).
    brief = full.split("\n\n# Data files (")[0]
    assert checking.startswith(brief) and full.startswith(brief) and checking != full
    rules = (sample_copy / "business_rules.md").read_text().strip()
    assert rules in brief and brief.index(rules) < brief.index("# Question")  # The rules whole, first.
    assert "## transactions.csv" in full and "## transactions.csv" not in brief


def test_the_verifier_and_the_finalizer_see_the_files_the_script_reads(config, sample_copy):
    """Their context is the shared prefix plus the descriptions of the files the script they judge
    reads (to check its reading of a column against that column's profile), not every file's; the
    finalizer also sees the verifier's reason under its own heading."""
    reads_two = py(f"import pandas as pd\nt = pd.read_csv(r'{sample_copy}/transactions.csv')\n"
                   f"m = pd.read_excel(r'{sample_copy}/merchants.xlsx')\nprint('rows:', len(t), len(m))")
    why = "It prints both counts, read from `transactions.csv` and merchants_x.xlsx."
    result, _, model = run({
        "planner": ["Count both."], "coder": [reads_two], "verifier": [f"Yes\n{why}"],
        "finalizer": [py("print(3000)")],
    }, config, sample_copy)
    assert result.outcome == "verified"
    full = next(m[0]["content"] for r, m in model.calls if r == "planner")
    brief = full.split("\n\n# Data files (")[0]
    for role in ("verifier", "finalizer"):
        system = next(m[0]["content"] for r, m in model.calls if r == role)
        assert system.startswith(brief + "\n\n# Data files the script reads (2)\n")  # Still a cached prefix.
        assert "## transactions.csv" in system and "## merchants.xlsx" in system
        assert "is_fraud" in system and "## categories.json" not in system  # The columns, not other files.
    finalizer_prompt = next(m[-1]["content"] for r, m in model.calls if r == "finalizer")
    assert f"# The verifier's reason\n{why}\n" in finalizer_prompt


def test_the_routers_reason_reaches_the_planner_with_names_as_written(config, sample_copy):
    """Underscores in a file name vanished between the router's reason and the planner's prompt
    ('wildfire_total_fires_p45_54.csv' came back as 'wildfire total fires p45 54.csv')."""
    why = "`wildfire_total_fires_p45_54.csv` holds the *per_state* totals; use fees__v2.csv"
    result, _, model = run({
        "planner": ["Load transactions.csv.", "Load the other file."],
        "coder": [count_rows(sample_copy), py("print('ok: 1')")],
        "verifier": ["No\nwrong file", "Yes"],
        "router": [f"**Step 1** - {why}"],
        "finalizer": [py("print(1)")],
    }, config, sample_copy)
    assert result.history[0]["action"] == "fix"
    planner_prompt = [m for role, m in model.calls if role == "planner"][1][-1]["content"]
    assert f"# Why the router chose to drop those steps\n{why}\n" in planner_prompt


def test_the_coder_is_told_when_its_output_was_cut(config, sample_copy):
    flood = py("for i in range(2000):\n    print(f'row {i} ' + 'x' * 20)\nprint('total rows: 2000')")
    result, _, model = run({
        "planner": ["Print everything.", "Count."],
        "coder": [flood, count_rows(sample_copy)],
        "verifier": ["No", "Yes"],
        "router": ["Add Step"],
        "finalizer": [py("print(3000)")],
    }, config, sample_copy)
    coder_prompts = [m[-1]["content"] for role, m in model.calls if role == "coder"]
    printed = len("\n".join(f"row {i} " + "x" * 20 for i in range(2000)) + "\ntotal rows: 2000")
    note = f"Note: the last script printed {printed:,} characters"
    assert note not in coder_prompts[0] and note in coder_prompts[1] and "more than the 6,000 reviewers" in coder_prompts[1]
    # The same count of characters cut as the reviewers' own marker says.
    cut = re.search(r"characters printed, ([\d,]+) cut;", [m for role, m in model.calls if role == "verifier"][0][-1][
        "content"]).group(1)
    assert f"reviewers are shown: {cut} were cut" in coder_prompts[1]
    verifier_prompt = [m for role, m in model.calls if role == "verifier"][0][-1]["content"]
    assert "total rows: 2000" in verifier_prompt and "output cut:" in verifier_prompt


def test_fix_step_drops_it_and_everything_after_then_replans(config, sample_copy):
    s1, s2, s3 = (py(f"print('script {i}')") for i in (1, 2, 3))
    result, rec, model = run({
        "planner": ["Load.", "Step 2: Filter the wrong month.", "Filter March."],
        "coder": [s1, s2, s3],
        "verifier": ["No", "No", "Yes"],
        "router": ["Add Step", "Step 2 uses the wrong month."],
        "finalizer": [py("print('answer')")],
    }, config, sample_copy)
    assert result.outcome == "verified" and result.rounds == 3
    assert result.plan == ["Load.", "Filter March."]
    assert result.history[1] == {"round": 3, "action": "fix", "step": 2, "dropped": ["Filter the wrong month."],
                                 "fallback": False}
    # The re-planning prompt names the dropped step; the coder extends step 1's script, not step 2's.
    planner_prompt = [m for role, m in model.calls if role == "planner"][2][-1]["content"]
    assert "Filter the wrong month." in planner_prompt
    assert "# Why the router chose to drop those steps\nuses the wrong month." in planner_prompt
    third_coder_prompt = [m for role, m in model.calls if role == "coder"][2][-1]["content"]
    assert "script 1" in third_coder_prompt and "script 2" not in third_coder_prompt
    assert rec.of("plan")[-1]["dropped"] == ["Filter the wrong month."]


def test_fix_step_one_replans_from_scratch(config, sample_copy):
    result, _, _ = run({
        "planner": ["Wrong start.", "Right start."],
        "coder": [py("print(1)"), py("print(2)")],
        "verifier": ["No", "Yes"],
        "router": ["Step 1"],
        "finalizer": [py("print('ok')")],
    }, config, sample_copy)
    assert result.plan == ["Right start."] and result.answer == "ok"


def test_debugger_repairs_a_failing_script(config, sample_copy):
    broken = py(f"import pandas as pd\nprint(pd.read_csv(r'{sample_copy}/transactions.csv')['no_such_column'].sum())")
    result, rec, model = run({
        "planner": ["Count rows."],
        "coder": [broken],
        "debugger": [count_rows(sample_copy)],
        "verifier": ["Yes"],
        "finalizer": [py("print(3000)")],
    }, config, sample_copy)
    assert result.outcome == "verified"
    assert [e["ok"] for e in rec.of("execution")] == [False, True, True]
    debug_prompt = [m for role, m in model.calls if role == "debugger"][0][-1]["content"]
    assert "KeyError" in debug_prompt and "no_such_column" in debug_prompt
    assert "## transactions.csv" in [m for role, m in model.calls if role == "debugger"][0][0]["content"]


def test_the_debugger_sees_what_the_script_printed_before_failing(config, sample_copy):
    broken = py("print('rows loaded: 3000')\nprint('unmatched names: Foo, Bar')\nraise ValueError('boom')")
    model = run({"planner": ["Count rows."], "coder": [broken], "debugger": [count_rows(sample_copy)],
                 "verifier": ["Yes"], "finalizer": [py("print(3000)")]}, config, sample_copy)[2]
    debug_prompt = [m for role, m in model.calls if role == "debugger"][0][-1]["content"]
    printed = debug_prompt.split("# What it printed before failing")[1].split("# What went wrong")[0]
    assert "unmatched names: Foo, Bar" in printed and "ValueError: boom" in debug_prompt


def test_debugger_attempts_are_bounded_and_a_broken_round_is_not_verified(config, sample_copy):
    config.values["debug_attempts"] = 2
    config.values["max_rounds"] = 1
    result, rec, model = run({
        "planner": ["Do it."],
        "coder": [py("raise ValueError('boom')")],
        "debugger": [py("raise ValueError('still boom')")],
        "verifier": ["Yes"],
    }, config, sample_copy)
    assert [role for role, _ in model.calls].count("debugger") == 2
    assert "verifier" not in [role for role, _ in model.calls]  # A failed script costs no verifier call.
    assert result.outcome == "failed" and "no script ran successfully" in result.reason
    assert result.exit_code() == ExitCode.FAILED


def test_round_cap_gives_an_unverified_answer(config, sample_copy):
    config.values["max_rounds"] = 3
    result, rec, model = run({
        "planner": ["Count the rows."],
        "coder": [count_rows(sample_copy)],
        "verifier": ["No"],
        "router": ["Add Step"],
        "finalizer": [py("print(3000)")],
    }, config, sample_copy)
    assert (result.outcome, result.answer, result.rounds, result.verified) == ("unverified", "3000", 3, False)
    assert result.exit_code() == ExitCode.UNVERIFIED
    assert "round cap" in result.reason
    roles = [role for role, _ in model.calls]
    assert roles.count("verifier") == 3 and roles.count("router") == 2  # No routing after the last round.


def test_finalizer_gets_the_guidelines(config, sample_copy):
    result, _, model = run({
        "planner": ["Average amount."],
        "coder": [py(f"import pandas as pd\nprint(pd.read_csv(r'{sample_copy}/transactions.csv').amount.mean())")],
        "verifier": ["Yes"],
        "finalizer": [py(f"import pandas as pd\nprint(f\"{{pd.read_csv(r'{sample_copy}/transactions.csv').amount.mean():.2f}}\")")],
    }, config, sample_copy, question="Average amount?", guidelines="Round to 2 decimals.")
    assert {role for role, _ in model.calls} == {"planner", "coder", "verifier", "finalizer"}
    for role, messages in model.calls:  # Every role knows the answer's form.
        assert "Round to 2 decimals." in messages[0]["content"], role
    assert result.answer == "93.40"


def test_malformed_replies_are_reasked_then_fall_back(config, sample_copy):
    config.values["max_rounds"] = 2
    result, rec, model = run({
        "planner": ["Step one.", "Step two."],
        "coder": ["Sure, I will write it.", count_rows(sample_copy)],
        "verifier": ["Maybe?", "Hard to say."],
        "router": ["hmm", "no idea"],
        "finalizer": [py("print(3000)")],
    }, config, sample_copy)
    roles = [role for role, _ in model.calls]
    assert roles[:3] == ["planner", "coder", "coder"]  # No code: re-asked once with a reminder.
    assert "single ```python code block" in model.calls[2][1][-1]["content"]
    assert rec.of("verdict")[0]["reason"] == "unreadable verdict, taken as No"
    assert result.history[0]["action"] == "add" and result.history[0]["fallback"] is True
    assert result.outcome == "unverified"


def test_model_failure_ends_the_run_with_its_kind(config, sample_copy):
    result, _, _ = run({"planner": [ModelUnreachable("cannot reach the model")]}, config, sample_copy)
    assert result.outcome == "failed" and result.error_kind == "model_unreachable"
    assert result.exit_code() == ExitCode.MODEL_UNREACHABLE


def test_hostile_script_cannot_change_the_data_and_fails_loudly(config, sample_copy):
    before = tree_bytes(sample_copy)
    config.values["max_rounds"] = 1
    config.values["debug_attempts"] = 0
    result, rec, _ = run({
        "planner": ["Delete the data."],
        "coder": [py(f"import os\nos.chmod(r'{sample_copy}/transactions.csv', 0o644)\nos.utime(r'{sample_copy}/transactions.csv', (0, 0))\nprint('done')")],
        "verifier": ["Yes"],
    }, config, sample_copy)
    execution = rec.of("execution")[0]
    # Prevented by the tier (read-only mount, Landlock) or, in the basic tier, caught afterwards.
    prevented = "Read-only file system" in execution["stderr"] or "Permission denied" in execution["stderr"]
    assert not execution["ok"] and (prevented or execution["data_changed"] == ["transactions.csv"])
    assert tree_bytes(sample_copy) == before
    assert result.outcome == "failed"


def test_run_folder_keeps_everything_and_no_secret(config, sample_copy, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret-value-1234")
    leak = py("print('key is sk-very-secret-value-1234')")
    result, _, _ = run({"planner": ["Count the rows."], "coder": [leak], "verifier": ["Yes"],
                        "finalizer": [py("print(1)")]}, config, sample_copy)
    run_dir = Path(result.run_dir)
    assert (run_dir / "events.jsonl").exists() and (run_dir / "result.json").exists()
    assert sorted(p.name.split("-", 1)[1] for p in (run_dir / "calls").iterdir()) == [
        "coder.json", "finalizer.json", "planner.json", "verifier.json"]
    assert len(list((run_dir / "scripts").glob("*.py"))) == 2 and not list((run_dir / "work").glob("*.py"))
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert b"sk-very-secret-value-1234" not in path.read_bytes(), path


def test_run_folder_is_never_put_inside_the_data_folder(sample_copy, tmp_path, monkeypatch):
    from dsstar_cli.config import load_config

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    config = load_config(overrides={"run_dir": str(sample_copy / ".dsstar" / "runs")}, env={}, cwd=tmp_path)
    before = tree_bytes(sample_copy)
    result, _, _ = run({"planner": ["S."], "coder": [py("print(1)")], "verifier": ["Yes"],
                        "finalizer": [py("print(1)")]}, config, sample_copy)
    assert not (sample_copy / ".dsstar").exists()
    assert str(sample_copy) not in result.run_dir
    assert Path(result.run_dir).is_relative_to((tmp_path / "xdg").resolve())  # The user data dir took it.
    assert tree_bytes(sample_copy) == before


def answer(text: str) -> str:
    return f"```answer\n{text}\n```"


def test_the_finalizer_answers_from_the_output_without_running_a_script(config, sample_copy):
    result, rec, model = run({
        "planner": ["Count the rows of transactions.csv."],
        "coder": [count_rows(sample_copy)],
        "verifier": ["Yes, the count is printed."],
        "finalizer": ["The output already holds it:\n" + answer("3000  \n")],
    }, config, sample_copy)
    assert (result.outcome, result.answer, result.verified, result.answer_from) == (
        "verified", "3000", True, "solution_output")
    assert result.exit_code() == ExitCode.VERIFIED
    assert [e["purpose"] for e in rec.of("execution")] == ["solution"]  # No second scan of the data:
    assert [e["purpose"] for e in rec.of("code")] == ["solution"]       # no final script written or run.
    assert (result.final_code, result.final_output) == ("", "")
    assert rec.of("answered_from_output") == [{"round": 1, "answer": "3000", "verified": True}]
    kinds = [k for k in rec.kinds() if k not in ("call_started", "call")]
    assert kinds[-3:] == ["finalizing", "answered_from_output", "answer"]
    assert rec.of("answer")[0]["answer_from"] == "solution_output"
    scripts = sorted(p.name for p in (Path(result.run_dir) / "scripts").glob("*.py"))
    assert scripts == ["001-round01-solution.py"]
    prompt = [m for role, m in model.calls if role == "finalizer"][0][-1]["content"]
    assert "```answer" in prompt and "rows: 3000" in prompt  # It was offered the choice, with the output.


def test_a_script_beside_an_answer_block_wins_and_runs(config, sample_copy):
    result, rec, _ = run({
        "planner": ["Count the rows of transactions.csv."], "coder": [count_rows(sample_copy)], "verifier": ["Yes"],
        "finalizer": [answer("2999") + "\n" + py("print(3000)")],
    }, config, sample_copy)
    assert (result.answer, result.answer_from) == ("3000", "final_script")
    assert [e["purpose"] for e in rec.of("execution")] == ["solution", "final"]


def test_an_empty_answer_block_is_re_asked_with_the_reminder(config, sample_copy):
    result, rec, model = run({
        "planner": ["Count the rows of transactions.csv."], "coder": [count_rows(sample_copy)], "verifier": ["Yes"],
        "finalizer": ["```answer\n   \n```", answer("3000")],
    }, config, sample_copy)
    assert (result.outcome, result.answer, result.answer_from) == ("verified", "3000", "solution_output")
    calls = [m for role, m in model.calls if role == "finalizer"]
    assert len(calls) == 2 and "```answer" in calls[1][-1]["content"] and "```python" in calls[1][-1]["content"]
    assert [e["purpose"] for e in rec.of("execution")] == ["solution"]


def test_a_finalizer_that_never_gives_an_answer_or_a_script_fails_the_run(config, sample_copy):
    result, rec, model = run({
        "planner": ["Count the rows of transactions.csv."], "coder": [count_rows(sample_copy)], "verifier": ["Yes"],
        "finalizer": ["The answer is 3000.", answer("1") + "\n" + answer("2")],  # prose, then two answers
    }, config, sample_copy)
    assert (result.outcome, result.answer, result.answer_from) == ("failed", None, None)
    assert result.reason == "the finalizer gave neither an answer nor a script, even after a format reminder"
    assert result.exit_code() == ExitCode.FAILED
    assert [role for role, _ in model.calls].count("finalizer") == 2
    assert [e["purpose"] for e in rec.of("execution")] == ["solution"]


def test_at_the_round_cap_an_answer_from_the_output_stays_unverified(config, sample_copy):
    from dsstar_cli.display import PlainDisplay

    config.values["max_rounds"] = 1
    result, rec, _ = run({
        "planner": ["Count the rows of transactions.csv."], "coder": [count_rows(sample_copy)], "verifier": ["No"],
        "finalizer": [answer("3000")],
    }, config, sample_copy)
    assert (result.outcome, result.answer, result.answer_from) == ("unverified", "3000", "solution_output")
    assert result.exit_code() == ExitCode.UNVERIFIED
    out = io.StringIO()
    display = PlainDisplay(out)
    for event in rec.events:
        display(event)
    assert "dsstar: answered from the last script's output, no script run\n" in out.getvalue()
    assert "running " not in out.getvalue().split("writing the final answer")[1]
