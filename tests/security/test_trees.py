"""Trees no path can name, left by a script in every tier on both paths, through the real CLI and a
fake model server: a folder 1,500 deep (os.walk recursed into it and crashed dsstar), then files
below a path longer than PATH_MAX (os.walk skipped them: they slipped the work folder's cap).
dsstar must survive both, with its result, its --json and result.json; count what lies past
PATH_MAX against the cap and remove it; keep listing what lies 1,500 deep; and a run afterwards
must work.

One run holds both attacks, one step each (a dsstar run costs seconds, mostly litellm's import):
the second step's walks meet the tree the first left. What is left in work/ is measured with `du`
and `find` (coreutils walk by descriptor, whatever the depth), never with dsstar's own walk."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT
from fake_openai import FakeOpenAIServer
from test_cli import dsstar

CAP_MB = 8
DEEP_TREE = """
import os
for _ in range(1500):
    os.mkdir("a")
    os.chdir("a")
with open("bottom.txt", "w") as handle:
    handle.write("1,500 folders down")
os.chdir(os.environ["HOME"])
"""
PAST_PATH_MAX = """
import os
for letter in "bcdefghijklmnopqrstuvwxyz":  # 25 folders of 200-character names: over 5,000 characters
    os.mkdir(letter * 200)
    os.chdir(letter * 200)
for i in range(5):  # 30 MB in files under the file-size limit, past the 8 MB cap
    with open(f"blob{i}.bin", "wb") as handle:
        handle.write(os.urandom(6 << 20))
print("wrote 30 MB past PATH_MAX")
os.chdir(os.environ["HOME"])
"""
SCRIPT = "print('total units:', 10 + 20)\n"


def model(*attacks: str):
    """A quick model: one step per attack, each script running its attack before its own work (the
    sum of a small file); a debugger that answers with the clean script; a verifier that says Yes
    once every attack has run; the answer taken from the output."""
    left = list(attacks)

    def responder(role: str, messages: list[dict]) -> str:
        if role == "coder":
            return f"```python\n{left.pop(0) if left else ''}{SCRIPT}```"
        if role == "verifier":
            return "No: another step is needed." if left else "Yes. The output holds the total."
        return {"planner": "Sum the units of sales.csv.", "debugger": f"```python\n{SCRIPT}```",
                "finalizer": "```answer\n30\n```"}.get(role, "Add Step")

    return responder


def ask(tmp_path: Path, tier, responder) -> subprocess.CompletedProcess:
    """`dsstar ask --json` over a small data folder in `tier`, warm or cold, with the cap of CAP_MB."""
    backend = tier.options.get("strong_backend", "auto")
    (tmp_path / "dsstar.yaml").write_text(
        f"sandbox:\n  tier: {tier.kind}\n  require: {tier.kind}\n  strong_backend: {backend}\n"
        f"  warm_worker: {str(tier.warm).lower()}\n  max_run_folder_mb: {CAP_MB}\n")
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "sales.csv").write_text("region,units\nnorth,10\nsouth,20\n")
    with FakeOpenAIServer(responder) as server:
        return dsstar("ask", str(data), "How many units were sold?", "--json", "--fresh", "--model", "openai/fake",
                      "--api-base", server.base_url, cwd=tmp_path)


@functools.cache
def schema() -> dict:
    return json.loads(dsstar("schema", cwd=ROOT).stdout)


def finished(proc: subprocess.CompletedProcess, tier) -> tuple[dict, Path]:
    """dsstar ended on its own terms: a JSON result that validates, the same in result.json."""
    assert proc.stdout.strip(), f"no --json result (exit {proc.returncode}): {proc.stderr[-800:]}"
    result = json.loads(proc.stdout)
    jsonschema.validate(result, schema())
    assert proc.returncode == result["exit_code"], proc.stderr[-800:]
    assert result["sandbox"]["level"] == tier.kind
    run_dir = Path(result["run_dir"])
    assert json.loads((run_dir / "result.json").read_text())["run_dir"] == result["run_dir"]
    return result, run_dir


def executions(run_dir: Path) -> list[dict]:
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return [event for event in events if event["event"] == "execution"]


def du_bytes(folder: Path) -> int:
    return int(subprocess.run(["du", "-s", "-B1", str(folder)], capture_output=True, text=True, check=True)
               .stdout.split()[0])


def found(folder: Path, name: str) -> list[str]:
    return subprocess.run(["find", str(folder), "-name", name], capture_output=True, text=True).stdout.split()


@pytest.fixture
def runs(tmp_path):
    """The test's folder; its run folders are removed afterwards with `rm` (any depth)."""
    yield tmp_path
    subprocess.run(["rm", "-rf", str(tmp_path / "xdg-data")], check=False)


def test_a_tree_1500_deep_then_files_past_path_max_leave_dsstar_standing_and_capped(runs, tier_and_path):
    result, run_dir = finished(ask(runs, tier_and_path, model(DEEP_TREE, PAST_PATH_MAX)), tier_and_path)
    deep, past, *after = executions(run_dir)

    assert deep["ok"], f"the step that left a tree 1,500 deep failed: {deep['stderr'][-300:]}"
    bottom = [item["path"] for item in result["artifacts"] if item["path"].endswith("/bottom.txt")]
    assert bottom and bottom[0].count("/") == 1501, result["artifacts"]  # work/ + 1,500 folders

    assert "wrote 30 MB past PATH_MAX" in past["stdout"], past["stderr"][-300:]
    assert not past["ok"] and f"past the run folder's cap of {CAP_MB} MB" in past["stderr"], \
        f"the step passed with 30 MB below PATH_MAX: {past['stderr'][-300:]}"
    work = run_dir / "work"
    assert not found(work, "blob*"), "the files past the cap are still there"
    assert du_bytes(work) <= CAP_MB << 20, f"{du_bytes(work) >> 20} MB left in work/"
    assert found(work, "bottom.txt"), "the tree an earlier step left was removed with the files past the cap"

    assert after and after[-1]["ok"] and result["outcome"] == "verified", result["error"]  # The debugger's script.
    again, _ = finished(ask(runs, tier_and_path, model()), tier_and_path)
    assert again["outcome"] == "verified" and again["answer"] == "30", again["error"]
