"""Charts a run draws, as a user meets them: the CLI in a subprocess against the fake OpenAI server,
its script drawing with matplotlib in the sandbox. The PNG is real, and it is listed under the
answer (plain lines, the live view on a terminal), in --json (kind figure) and in `runs show`."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jsonschema
import pytest

from chart_agent import CHART_QUESTION, FIGURE, respond
from conftest import ROOT, SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from test_cli import dsstar
from test_stack import assert_real_png
from test_terminal import run_in_terminal, terminal_env

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond) as running:
        yield running


def ask(server, cwd: Path, *extra: str):
    return dsstar("ask", str(SAMPLE_DATA), CHART_QUESTION, "--model", "openai/fake", "--api-base", server.base_url,
                  *extra, cwd=cwd)


def test_a_chart_is_a_figure_artifact_in_json_plain_lines_and_runs_show(server, tmp_path):
    proc = ask(server, tmp_path, "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    jsonschema.validate(result, json.loads(dsstar("schema", cwd=ROOT).stdout))
    assert {"path": f"work/{FIGURE}", "kind": "figure"} in result["artifacts"]
    assert not [item for item in result["artifacts"] if ".matplotlib" in item["path"]]  # Its cache is no result.
    png = Path(result["run_dir"]) / "work" / FIGURE
    assert_real_png(png)

    shown = dsstar("runs", "show", Path(result["run_dir"]).name, cwd=tmp_path)  # Into a pipe: plain lines.
    assert shown.returncode == 0, shown.stderr
    assert f"dsstar: figure {png}\n" in shown.stdout

    plain = ask(server, tmp_path)  # Progress into a pipe: plain lines on stderr, the answer on stdout.
    assert plain.returncode == 0, plain.stderr
    folder = re.findall(r"run folder (\S+)\n", plain.stderr)[-1]
    assert f"dsstar: figure {folder}/work/{FIGURE}\n" in plain.stderr
    assert plain.stdout == f"the chart is in {FIGURE}\n"


def test_the_live_view_lists_the_chart_under_the_answer_whole(server, tmp_path):
    env = terminal_env(tmp_path)
    screen = run_in_terminal([sys.executable, "-m", "dsstar_cli", "ask", str(SAMPLE_DATA), CHART_QUESTION,
                              "--model", "openai/fake", "--api-base", server.base_url], tmp_path, env)
    text = ANSI.sub("", screen).replace("\r", "")
    folder = re.findall(r"run folder (\S+)\n", text)[-1]
    answer_at = text.index("Answer")
    line = f"figure {folder}/work/{FIGURE}"
    assert line in text[answer_at:], text[answer_at:]  # Whole: the terminal wraps it, Rich inserts no break.
