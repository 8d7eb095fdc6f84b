"""An answer that is a table, as a user meets it: a table on an 80-column terminal, rows and columns
in --json beside the text, and answer.csv kept as a table artifact. The CLI runs in a subprocess
against the fake OpenAI server; the finalizer's script prints the table as CSV."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path

import jsonschema
import pandas as pd
import pytest

from chart_agent import TABLE_QUESTION, respond_table
from conftest import ROOT, SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from test_cli import dsstar
from test_terminal import run_in_terminal, terminal_env

from dsstar_cli import tables

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def expected() -> dict[str, int]:
    tx = pd.read_csv(SAMPLE_DATA / "transactions.csv")
    return tx[tx["status"] == "settled"]["currency"].value_counts().sort_index().to_dict()


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond_table) as running:
        yield running


def test_a_table_answer_has_rows_and_columns_in_json_and_is_kept_as_csv(server, tmp_path):
    proc = dsstar("ask", str(SAMPLE_DATA), TABLE_QUESTION, "--json", "--model", "openai/fake", "--api-base",
                  server.base_url, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    jsonschema.validate(result, json.loads(dsstar("schema", cwd=ROOT).stdout))
    counts = expected()
    assert result["table"] == {"columns": ["currency", "settled_transactions"],
                               "rows": [[name, str(count)] for name, count in counts.items()]}
    assert result["answer"].splitlines()[0] == "currency,settled_transactions"  # The text, as printed, too.
    assert {"path": "answer.csv", "kind": "table"} in result["artifacts"]
    kept = (Path(result["run_dir"]) / "answer.csv").read_text()
    assert list(csv.reader(io.StringIO(kept))) == [result["table"]["columns"]] + result["table"]["rows"]


def test_a_table_answer_is_a_table_on_an_80_column_terminal(server, tmp_path):
    env = terminal_env(tmp_path)
    screen = run_in_terminal([sys.executable, "-m", "dsstar_cli", "ask", str(SAMPLE_DATA), TABLE_QUESTION,
                              "--model", "openai/fake", "--api-base", server.base_url], tmp_path, env)
    text = ANSI.sub("", screen).replace("\r", "")
    panel = text[text.index("Answer"):]
    assert re.search(r"currency\s+settled_transactions", panel), panel
    for name, count in expected().items():
        assert re.search(rf"│ *{name} +{count} *│", panel), panel  # One row a line, in the panel's border.
    assert "currency,settled_transactions" not in panel  # Drawn as a table, not the CSV text.
    folder = re.findall(r"run folder (\S+)\n", text)[-1]
    assert f"table {folder}/answer.csv" in panel


@pytest.mark.parametrize("text, columns, rows", [
    ("a,b\n1,2\n3,4", ["a", "b"], [["1", "2"], ["3", "4"]]),
    ("x\ty\n1\t2", ["x", "y"], [["1", "2"]]),
    ("| x | y |\n|---|---:|\n| 1 | 2 |", ["x", "y"], [["1", "2"]]),
    ('name,total\n"Delta, Inc",1826.11', ["name", "total"], [["Delta, Inc", "1826.11"]]),
])
def test_tables_are_recognised_in_the_forms_a_finalizer_prints(text, columns, rows):
    assert tables.parse(text) == tables.AnswerTable(columns, rows)


@pytest.mark.parametrize("text", ["Golden Gate Gaming", "135534.04", "Delta Electronics, Falcon Travel, Golden Gate",
                                  "a,b\n1", "a,b\n1,2,3", "Yes\nNo", "", None])
def test_an_answer_that_is_not_a_table_stays_text(text):
    assert tables.parse(text) is None
