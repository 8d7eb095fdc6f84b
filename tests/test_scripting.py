"""dsstar in scripts and CI: the JSON contract, exit codes, streams, batch mode, config commands."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT, SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import cli_env, dsstar

SECRET = "sk-scripting-secret-987654321"


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond) as running:
        yield running


def schema() -> dict:
    return json.loads(dsstar("schema", cwd=ROOT).stdout)


def test_result_validates_against_the_printed_schema(server, tmp_path):
    proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--model", "openai/fake", "--api-base",
                  server.base_url, cwd=tmp_path)
    result = json.loads(proc.stdout)
    jsonschema.validate(result, schema())
    assert result["schema_version"] == 1
    assert sorted(result["files_used"]) == ["merchants.xlsx", "transactions.csv"]
    assert result["answer_from"] == "final_script" and "print(names[rates.idxmax()])" in result["final_code"]


def test_an_answer_copied_from_the_output_runs_no_final_script(tmp_path):
    """Through litellm and a real server: the finalizer replies with an ```answer block; the answer
    is printed and in the JSON as before, no final script is written or run, and the result says so."""
    def from_output(role, messages):
        return "```answer\nGolden Gate Gaming\n```" if role == "finalizer" else respond(role, messages)

    with FakeOpenAIServer(from_output) as srv:
        as_json = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--model", "openai/fake", "--api-base",
                         srv.base_url, cwd=tmp_path)
        plain = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--model", "openai/fake", "--api-base", srv.base_url,
                       cwd=tmp_path)
    result = json.loads(as_json.stdout)
    jsonschema.validate(result, schema())
    assert as_json.returncode == 0 and result["outcome"] == "verified" and result["answer"] == "Golden Gate Gaming"
    assert (result["answer_from"], result["final_code"], result["final_output"]) == ("solution_output", "", "")
    assert sorted(result["files_used"]) == ["merchants.xlsx", "transactions.csv"]   # from the solution's script
    run_dir = Path(result["run_dir"])
    assert not list((run_dir / "scripts").glob("*final*"))                           # nothing run to answer
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["purpose"] for e in events if e["event"] == "execution"] == ["solution", "solution"]
    assert [e["answer"] for e in events if e["event"] == "answered_from_output"] == ["Golden Gate Gaming"]
    assert plain.returncode == 0 and plain.stdout == "Golden Gate Gaming\n"
    assert "dsstar: answered from the verified output, no script run\n" in plain.stderr


def test_error_json_and_every_documented_field_is_in_the_scripting_docs():
    page = (ROOT / "docs" / "scripting.md").read_text()
    printed = schema()
    assert len(printed["oneOf"]) == 3
    for part in printed["$defs"].values():
        for field in part["properties"]:
            assert f"`{field}`" in page, field


def test_exit_code_1_when_no_script_ever_runs(tmp_path):
    def broken(role, messages):
        return "```python\nraise SystemExit(2)\n```" if role in ("coder", "debugger") else respond(role, messages)

    with FakeOpenAIServer(broken) as srv:
        proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--max-rounds", "1", "--model", "openai/fake",
                      "--api-base", srv.base_url, cwd=tmp_path)
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and result["outcome"] == "failed" and result["answer"] is None


def test_exit_code_4_when_the_server_rejects_the_key(tmp_path):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    import threading

    class Reject(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = b'{"error": {"message": "Incorrect API key", "type": "invalid_request_error"}}'
            self.send_response(401)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Reject)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--model", "openai/fake", "--api-base",
                      f"http://127.0.0.1:{httpd.server_address[1]}/v1", cwd=tmp_path)
    finally:
        httpd.shutdown()
    result = json.loads(proc.stdout)
    assert proc.returncode == 4 and "rejected the credentials" in result["reason"]


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_run_exits_with_its_code_and_keeps_the_run(tmp_path, sig, code):
    with FakeOpenAIServer(respond, delay_s=1.0) as slow:
        env = cli_env(tmp_path)
        proc = subprocess.Popen([sys.executable, "-m", "dsstar_cli", "ask", str(SAMPLE_DATA), QUESTION, "--json",
                                 "--model", "openai/fake", "--api-base", slow.base_url], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(slow.requests) < 2 and time.monotonic() < deadline:  # Mid-run: past the first call.
            time.sleep(0.1)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    result = json.loads(stdout)
    assert result["outcome"] == "interrupted" and result["plan"]
    run_dir = Path(result["run_dir"])
    assert (run_dir / "result.json").exists() and (run_dir / "events.jsonl").stat().st_size > 0


def test_no_escape_codes_without_a_tty_even_with_term_dumb(server, tmp_path):
    for extra in ({"TERM": "dumb"}, {"NO_COLOR": "1", "TERM": "xterm-256color"}):
        proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--model", "openai/fake", "--api-base", server.base_url,
                      cwd=tmp_path, env_extra=extra)
        assert proc.returncode == 0 and "\x1b" not in proc.stderr + proc.stdout
        assert proc.stdout == "Golden Gate Gaming\n"


def test_no_progress_leaves_only_the_closing_line_on_stderr(server, tmp_path):
    proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--no-progress", "--model", "openai/fake", "--api-base",
                  server.base_url, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "Golden Gate Gaming\n")
    assert proc.stderr.startswith("dsstar: verified (exit 0); run folder ") and proc.stderr.count("\n") == 1


def test_batch_answers_every_question_in_parallel_and_resumes(server, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text("\n".join(json.dumps({"id": f"q{i}", "question": QUESTION, "guidelines": "a name"})
                                   for i in range(3)) + "\n")
    out = tmp_path / "answers.jsonl"
    proc = dsstar("ask", str(SAMPLE_DATA), "--questions", str(questions), "--workers", "2", "--out", str(out),
                  "--model", "openai/fake", "--api-base", server.base_url, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert sorted(r["id"] for r in lines) == ["q0", "q1", "q2"]
    assert all(r["answer"] == "Golden Gate Gaming" and r["guidelines"] == "a name" for r in lines)
    for record in lines:
        jsonschema.validate(record, schema())
    assert len(out.read_text().splitlines()) == 3
    for record in lines:  # The folder was analysed once, before the questions: not in any question's run.
        events = Path(record["run_dir"], "events.jsonl").read_text()
        assert '"analysis_started"' not in events and '"run_started"' in events
    rerun = dsstar("ask", str(SAMPLE_DATA), "--questions", str(questions), "--out", str(out), "--model",
                   "openai/fake", "--api-base", server.base_url, cwd=tmp_path)
    assert rerun.returncode == 0 and rerun.stdout == "" and "3 already answered" in rerun.stderr


def test_batch_plain_text_questions(server, tmp_path):
    questions = tmp_path / "q.txt"
    questions.write_text(f"{QUESTION}\n\n{QUESTION}\n")
    proc = dsstar("ask", str(SAMPLE_DATA), "--questions", str(questions), "-q", "--model", "openai/fake",
                  "--api-base", server.base_url, cwd=tmp_path)
    assert proc.returncode == 0 and sorted(json.loads(l)["id"] for l in proc.stdout.splitlines()) == ["1", "2"]


@pytest.mark.parametrize("content, message", [
    ('{"id": 1, "question": "a"}\nnot json\n', "q.jsonl:2 is not valid JSON"),
    ('{"id": 1}\n', 'needs a non-empty "question"'),
    ('{"id": 1, "question": "a"}\n{"id": 1, "question": "b"}\n', "repeats an id"),
    ("\n\n", "has no questions"),
])
def test_bad_question_files_are_usage_errors(tmp_path, content, message):
    (tmp_path / "q.jsonl").write_text(content)
    proc = dsstar("ask", str(SAMPLE_DATA), "--questions", "q.jsonl", "--model", "openai/x", cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_question_and_questions_file_are_exclusive(tmp_path):
    assert dsstar("ask", str(SAMPLE_DATA), cwd=tmp_path).returncode == 2
    (tmp_path / "q.txt").write_text("a?\n")
    assert dsstar("ask", str(SAMPLE_DATA), "q?", "--questions", "q.txt", cwd=tmp_path).returncode == 2


def test_config_show_names_sources_and_never_a_key(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "dsstar.yaml").write_text("max_rounds: 4\napi_base: https://user:hunter2secret@proxy.example/v1\n")
    proc = dsstar("config", "show", "--model", "openai/gpt-4.1", cwd=project,
                  env_extra={"OPENAI_API_KEY": SECRET, "DSSTAR_MODEL": "gemini/x"})
    assert proc.returncode == 0, proc.stderr
    assert "max_rounds" in proc.stdout and "dsstar.yaml)" in proc.stdout and "(flag --model)" in proc.stdout
    assert SECRET not in proc.stdout and "hunter2secret" not in proc.stdout
    elsewhere = tmp_path / "elsewhere"  # Not below the project: its dsstar.yaml does not apply.
    elsewhere.mkdir()
    data = json.loads(dsstar("config", "show", "--json", cwd=elsewhere, env_extra={"DSSTAR_MODEL": "gemini/x"}).stdout)
    assert data["config"]["model"] == {"value": "gemini/x", "source": "env DSSTAR_MODEL"}
    assert data["credentials"]["gemini/x"]["credentials"].startswith("missing: set")


def test_config_alone_is_config_show_as_runs_alone_lists_the_runs(tmp_path):
    """`dsstar config` exited 2 with the help (issue 23); like `llm logs` (= `llm logs list`) and
    `dsstar runs`, it now does its everyday job, and takes that command's options."""
    (tmp_path / "dsstar.yaml").write_text("max_rounds: 4\n")
    alone = dsstar("config", cwd=tmp_path)
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout == dsstar("config", "show", cwd=tmp_path).stdout and "max_rounds" in alone.stdout
    as_json = dsstar("config", "--json", "-m", "openai/gpt-4.1", cwd=tmp_path)
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["config"]["max_rounds"]["value"] == 4
    assert dsstar("runs", cwd=tmp_path).returncode == 0
    listed = dsstar("config", "-h", cwd=tmp_path)
    assert listed.returncode == 0 and "show" in listed.stdout and "init" in listed.stdout
    wrong = dsstar("config", "shwo", cwd=tmp_path)  # A mistyped command is still refused as one.
    assert wrong.returncode == 2 and "No such command" in wrong.stderr


def test_every_key_has_a_variable_and_an_unknown_one_is_named_once(tmp_path):
    """Only 9 keys had a DSSTAR_* variable and a mistyped one was ignored in silence (issue 23); now
    each key has one, and a variable that sets nothing gets one warning line (its value never shown)."""
    env = {"DSSTAR_LLM_RETRIES": "2", "DSSTAR_SANDBOX_TIER": "basic", "DSSTAR_ROLES_CODER_MODEL": "openai/x",
           "DSSTAR_LLM_TIMEOUT_S": "30", "DSSTAR_LLM_MAX_TOKENS": "500", "DSSTAR_ANALYZER_CACHE": "false",
           "DSSTAR_MAX_ROUND": SECRET, "DSSTAR_OPENAI_API_KEY": SECRET}
    proc = dsstar("config", "show", "--json", cwd=tmp_path, env_extra=env)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)["config"]
    assert {key: (shown[key]["value"], shown[key]["source"]) for key in (
        "llm.retries", "sandbox.tier", "roles.coder.model", "llm.timeout_s", "llm.max_tokens", "analyzer.cache")} == {
        "llm.retries": (2, "env DSSTAR_LLM_RETRIES"), "sandbox.tier": ("basic", "env DSSTAR_SANDBOX_TIER"),
        "roles.coder.model": ("openai/x", "env DSSTAR_ROLES_CODER_MODEL"),
        "llm.timeout_s": (30.0, "env DSSTAR_LLM_TIMEOUT_S"), "llm.max_tokens": (500, "env DSSTAR_LLM_MAX_TOKENS"),
        "analyzer.cache": (False, "env DSSTAR_ANALYZER_CACHE")}
    assert proc.stderr.splitlines() == [
        "dsstar: warning: DSSTAR_MAX_ROUND is not a dsstar setting, ignored (did you mean DSSTAR_MAX_ROUNDS?)",
        "dsstar: warning: DSSTAR_OPENAI_API_KEY is not a dsstar setting, ignored (each key has one: llm.timeout_s "
        "is DSSTAR_LLM_TIMEOUT_S)"]
    assert SECRET not in proc.stdout + proc.stderr
    clash = dsstar("config", "show", cwd=tmp_path, env_extra={"DSSTAR_LLM_TIMEOUT": "3", "DSSTAR_LLM_TIMEOUT_S": "4"})
    assert clash.returncode == 4 and "DSSTAR_LLM_TIMEOUT_S" in clash.stderr and "DSSTAR_LLM_TIMEOUT " in clash.stderr
    quiet = dsstar("config", "show", cwd=tmp_path, env_extra={"DSSTAR_BIGDATA_GB": "2", "DSSTAR_LLM_TIMEOUT": "3"})
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_the_project_file_is_found_from_the_current_folder_upward_up_to_home(tmp_path):
    """./dsstar.yaml was read from the current folder only (issue 23): from a project's subfolder
    its settings were lost. Now the nearest above is used, as git finds .git, not past the home
    folder, and `config show` names it."""
    home = tmp_path / "home"
    sub = home / "project" / "src" / "deep"
    sub.mkdir(parents=True)
    (tmp_path / "dsstar.yaml").write_text("max_rounds: 99\n")  # Above the home folder: never read.
    env = {"HOME": str(home)}
    show = lambda cwd: json.loads(dsstar("config", "show", "--json", cwd=cwd, env_extra=env).stdout)
    assert show(sub)["config"]["max_rounds"]["value"] == 10 and show(sub)["files"] == []
    (home / "dsstar.yaml").write_text("max_rounds: 7\n")
    (home / "project" / "dsstar.yaml").write_text("max_rounds: 5\n")
    found = show(sub)
    project = str(home / "project" / "dsstar.yaml")
    assert found["config"]["max_rounds"] == {"value": 5, "source": project}
    assert found["files"] == [{"path": project, "layer": "project"}]
    text = dsstar("config", cwd=sub, env_extra=env).stdout
    assert f"config files: {project} (project)\n" in text
    assert show(home / "project")["config"]["max_rounds"]["value"] == 5  # The current folder's own, as before.
    (home / "project" / "dsstar.yaml").unlink()
    assert show(sub)["config"]["max_rounds"]["value"] == 7  # The home folder's is the last one looked at.


def test_a_project_file_above_that_others_can_write_is_refused(tmp_path):
    """A dsstar.yaml someone else left in a shared folder above (like /tmp) could point runs at
    their server: one above the current folder must be the user's and writable only by them."""
    shared, mine = tmp_path / "shared", tmp_path / "shared" / "my-work"
    mine.mkdir(parents=True)
    planted = shared / "dsstar.yaml"
    planted.write_text("api_base: http://attacker.example/v1\n")
    planted.chmod(0o666)
    refused = dsstar("config", "show", cwd=mine)
    assert refused.returncode == 4 and "writable by anyone" in refused.stderr and "attacker" not in refused.stdout
    if os.getuid() == 0:  # Only root can give a file to another user.
        planted.chmod(0o644)
        os.chown(planted, 65534, 65534)
        other = dsstar("config", "show", cwd=mine)
        assert other.returncode == 4 and "owned by another user" in other.stderr
    chosen = dsstar("config", "show", "--json", "--config", str(planted), cwd=mine)  # Named: the user's choice.
    assert json.loads(chosen.stdout)["files"] == [{"path": str(planted), "layer": "--config"}]


def test_config_show_names_the_endpoint_and_credential_variable_in_use(tmp_path):
    """api_base null with OPENAI_API_BASE set: the calls go to that server, and show says so."""
    proc = dsstar("config", "show", "--json", "--model", "openai/gpt-4.1", cwd=tmp_path,
                  env_extra={"OPENAI_API_KEY": SECRET, "OPENAI_API_BASE": "http://127.0.0.1:8000/v1"})
    data = json.loads(proc.stdout)
    assert data["config"]["api_base"]["value"] is None
    assert data["credentials"]["openai/gpt-4.1"] == {
        "endpoint": "http://127.0.0.1:8000/v1", "endpoint_source": "env OPENAI_API_BASE",
        "credentials": "OPENAI_API_KEY (set, value hidden)"}
    text = dsstar("config", "show", "--model", "openai/gpt-4.1", "--api-base", "http://h:1/v1", cwd=tmp_path).stdout
    assert "endpoint http://h:1/v1 (flag --api-base)" in text and SECRET not in text


def test_config_init_writes_every_key_commented_out_and_will_not_overwrite(tmp_path, monkeypatch):
    from dsstar_cli.config import load_config, packaged_default_text

    assert dsstar("config", "init", cwd=tmp_path).returncode == 0
    text = (tmp_path / "dsstar.yaml").read_text()
    assert "# max_rounds: 10" in text and "\nmax_rounds:" not in text
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    user = tmp_path / "xdg" / "dsstar" / "config.yaml"
    user.parent.mkdir(parents=True)
    user.write_text("max_rounds: 7\n")
    config = load_config(env={}, cwd=tmp_path)  # The written file pins nothing: the user file's value stands.
    assert config.max_rounds == 7 and config["model"] is None
    assert {k for k, v in config.sources.items() if v != "default"} == {"max_rounds"}
    (tmp_path / "dsstar.yaml").write_text(text.replace("# max_rounds: 10", "max_rounds: 12"))
    assert load_config(env={}, cwd=tmp_path).max_rounds == 12
    assert all(not line.strip() or line.lstrip().startswith("#") for line in text.splitlines())
    keys = [line for line in packaged_default_text().splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert len(keys) > 30 and all(f"# {line}" in text for line in keys)
    again = dsstar("config", "init", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr


def test_doctor_reports_what_to_fix(server, tmp_path):
    bad = dsstar("doctor", "--model", "openai/gpt-4.1", cwd=tmp_path)
    assert bad.returncode == 4 and "FAIL  credentials openai/gpt-4.1: set OPENAI_API_KEY" in bad.stdout
    good = dsstar("doctor", "--model", "openai/fake", "--api-base", server.base_url, cwd=tmp_path)
    assert good.returncode == 0 and "answers" in good.stdout and "FAIL" not in good.stdout
    down = dsstar("doctor", "--model", "openai/fake", "--api-base", "http://127.0.0.1:9/v1", cwd=tmp_path)
    assert down.returncode == 4 and "cannot reach" in down.stdout


def test_help_lists_exit_codes_and_completion(tmp_path):
    help_text = dsstar("ask", "--help", cwd=tmp_path, env_extra={"COLUMNS": "200"}).stdout
    for code in ("0 verified", "3 unverified", "130 interrupted", "143 terminated", "6 bad data folder"):
        assert code in help_text
    assert "--install-completion" in dsstar("--help", cwd=tmp_path).stdout


def test_force_color_gives_the_live_view_even_in_a_pipe(server, tmp_path):
    proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--model", "openai/fake", "--api-base", server.base_url,
                  cwd=tmp_path, env_extra={"FORCE_COLOR": "1", "NO_COLOR": "", "TERM": "xterm-256color"})
    assert proc.returncode == 0 and "\x1b[" in proc.stderr and "Round 2/10" in proc.stderr
    assert proc.stdout == "Golden Gate Gaming\n"  # stdout stays plain whatever stderr shows.
