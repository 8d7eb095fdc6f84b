"""The command line's own surface: help, usage lines, short options, and bad arguments under --json."""

from __future__ import annotations

import json

import jsonschema

from conftest import ROOT, SAMPLE_DATA
from dsstar_cli import __version__
from test_cli import dsstar


def test_help_and_version_have_short_options_and_read_as_documented(tmp_path):
    wide = {"COLUMNS": "160"}
    short = dsstar("ask", "-h", cwd=tmp_path, env_extra=wide)
    assert short.returncode == 0 and "ask [OPTIONS] DATA_DIR [QUESTION]" in short.stdout
    assert "<bool>" not in short.stdout and "{data_dir}" not in short.stdout
    assert dsstar("-h", cwd=tmp_path).returncode == 0
    version = dsstar("-V", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("dsstar ")
    bench = dsstar("bench", "-h", cwd=tmp_path, env_extra=wide).stdout
    for flag in ("--max-cost", "--timeout", "--code-timeout", "--llm-timeout"):
        assert flag in bench, flag
    resume = dsstar("resume", "-h", cwd=tmp_path, env_extra=wide).stdout
    assert "--api-base" in resume and "--model" in resume and "resume [OPTIONS] RUN " in resume


def schema() -> dict:
    return json.loads(dsstar("schema", cwd=ROOT).stdout)


def test_a_flag_typo_with_json_prints_a_valid_error_object(tmp_path):
    proc = dsstar("ask", str(SAMPLE_DATA), "q?", "--json", "--modle", "openai/x", cwd=tmp_path)
    assert proc.returncode == 2
    error = json.loads(proc.stdout)
    jsonschema.validate(error, schema())
    assert error["outcome"] == "error" and error["error"]["kind"] == "usage" and "--modle" in error["error"]["message"]
    assert proc.stderr.count("\n") == 1 and "╭" not in proc.stderr and "--model" in proc.stderr


def test_errors_before_a_run_validate_against_the_schema(tmp_path):
    missing = dsstar("ask", str(tmp_path / "nope"), "q?", "--json", "--model", "openai/x", cwd=tmp_path)
    error = json.loads(missing.stdout)
    jsonschema.validate(error, schema())
    assert (missing.returncode, error["exit_code"], error["question"]) == (6, 6, "q?")
    bad_flag = dsstar("ask", str(SAMPLE_DATA), "q?", "--json", "--max-rounds", "0", cwd=tmp_path)
    assert bad_flag.returncode == 2 and "--max-rounds" in bad_flag.stderr
    jsonschema.validate(json.loads(bad_flag.stdout), schema())


def test_bench_takes_the_budget_flags(tmp_path):
    (tmp_path / "tasks.jsonl").write_text('{"task_id": "1", "question": "q?", "level": "easy"}\n')
    proc = dsstar("bench", "tasks.jsonl", "--data", str(SAMPLE_DATA), "--model", "openai/fake", "--api-base",
                  "http://127.0.0.1:9/v1", "--max-cost", "1", cwd=tmp_path)
    assert proc.returncode == 2 and "--max-cost needs a model with a price" in proc.stderr


def test_doctor_json(tmp_path):
    proc = dsstar("doctor", "--json", "--model", "openai/fake", "--api-base", "http://127.0.0.1:9/v1", cwd=tmp_path)
    report = json.loads(proc.stdout)
    assert proc.returncode == 4 and report["ok"] is False
    assert any(c["name"] == "api_base" and not c["ok"] and "is the server running?" in c["detail"]
               for c in report["checks"])


def every_command() -> list[list[str]]:
    """Every command and group of dsstar's, as words after `dsstar` (read from the app itself, so a
    command added later is checked too)."""
    import typer

    from dsstar_cli.cli import app

    found, todo = [], [([], typer.main.get_command(app))]
    while todo:
        words, command = todo.pop()
        found.append(words)
        for name, sub in getattr(command, "commands", {}).items():
            todo.append(([*words, name], sub))
    return sorted(found)


def test_version_and_help_read_the_same_after_every_command(tmp_path):
    """The README says -V is --version everywhere (issue 23: `dsstar ask -V` was refused), and a
    flag shows no `<bool>` (`dsstar schema -h` showed `--help -h <bool>`)."""
    commands = every_command()
    assert ["ask"] in commands and ["runs", "show"] in commands and ["schema"] in commands
    for words, flag in [(words, "-V") for words in commands] + [(["ask"], "--version")]:
        version = dsstar(*words, flag, cwd=tmp_path)
        assert (version.returncode, version.stdout, version.stderr) == (0, f"dsstar {__version__}\n", ""), \
            (words, flag, version.stderr)
    for words in commands:
        shown = dsstar(*words, "-h", cwd=tmp_path, env_extra={"COLUMNS": "160"})
        assert shown.returncode == 0 and "--help" in shown.stdout, words
        assert "<bool>" not in shown.stdout, (words, shown.stdout)
    assert "--version" in dsstar("-h", cwd=tmp_path).stdout  # Listed once, at the top.
