"""A folder with nothing to read is refused before any model call; a junk file among good ones is
described plainly; a CSV whose broken quote swallows lines says so. The CLI in a subprocess,
against the fake OpenAI-compatible server (which counts what it is asked)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import dsstar

JUNK = bytes(range(256)) * 16  # Binary data, NUL bytes included.


def _empty_csv(folder: Path) -> None:
    (folder / "data.csv").write_bytes(b"")


def _junk_csv(folder: Path) -> None:
    (folder / "data.csv").write_bytes(JUNK)


def _empty_and_unreadable(folder: Path) -> None:
    (folder / "notes.txt").write_bytes(b"")
    (folder / "rows.json").write_bytes(b"")
    (folder / "table.parquet").write_bytes(JUNK)
    os.mkfifo(folder / "feed.csv")  # Never opened: not a regular file.


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(respond) as running:
        yield running


@pytest.mark.parametrize("fill", [_empty_csv, _junk_csv, _empty_and_unreadable],
                         ids=["0-byte csv", "binary junk named .csv", "empty and unreadable files"])
def test_a_folder_with_no_usable_data_is_refused_before_any_model_call(server, tmp_path, fill):
    data = tmp_path / "data"
    data.mkdir()
    fill(data)
    asked = len(server.requests)
    proc = dsstar("ask", str(data), QUESTION, "--model", "openai/fake", "--api-base", server.base_url, cwd=tmp_path)
    assert proc.returncode == 6, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("dsstar: error:")]
    assert len(errors) == 1 and f"data folder {data} has no usable data: " in errors[0], proc.stderr
    assert proc.stdout == ""
    assert len(server.requests) == asked  # No model call.
    assert json.loads(dsstar("runs", "--json", cwd=tmp_path).stdout)["runs"] == []  # No run kept.


def test_the_refusal_is_the_same_with_json_and_in_a_dry_run(server, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    _empty_csv(data)
    proc = dsstar("ask", str(data), QUESTION, "--json", "--model", "openai/fake", "--api-base", server.base_url,
                  cwd=tmp_path)
    error = json.loads(proc.stdout)
    assert proc.returncode == 6 and error["exit_code"] == 6 and error["error"]["kind"] == "data_folder"
    assert "data.csv: the file is empty" in error["error"]["message"]
    dry = dsstar("ask", str(data), QUESTION, "--dry-run", "--model", "openai/fake", cwd=tmp_path)
    assert dry.returncode == 6 and "has no usable data" in dry.stderr


def test_a_junk_file_among_good_ones_is_described_plainly_and_the_run_goes_on(server, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DATA, data)
    (data / "junk.csv").write_bytes(JUNK)
    described = dsstar("describe", str(data), cwd=tmp_path)
    junk = described.stdout.split("## junk.csv", 1)[1].split("\n## ", 1)[0]
    assert "Could not be read as a table: the file holds binary data" in junk, junk
    proc = dsstar("ask", str(data), QUESTION, "--json", "--model", "openai/fake", "--api-base", server.base_url,
                  cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["answer"] == "Golden Gate Gaming"


def test_a_quote_that_swallows_lines_is_flagged_with_how_many_and_from_where(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    lines = ["id,name,score"] + [f"{i},name{i},{i * 2}" for i in range(1, 201)]
    lines[1] = '1,"broken name,2'      # The quote opened here ...
    lines[200] = '200,name200",400'    # ... closes 199 lines later: pandas reads "1 data row".
    (data / "scores.csv").write_text("\n".join(lines) + "\n")
    proc = dsstar("describe", str(data), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "1 data row" in proc.stdout  # What pandas makes of it ...
    assert ("Broken quoting: 199 line(s), most looking like rows of their own, are read inside a quoted field "
            "of another row; the first such field opens on line 2 and closes on line 201") in proc.stdout  # ... flagged.


def test_quoted_fields_that_span_lines_legitimately_are_not_flagged(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    rows = [f'{i},"{i} Main Street\nSpringfield\nUSA, NY",{i * 3}' for i in range(50)]  # The last line of
    (data / "addresses.csv").write_text("id,address,visits\n" + "\n".join(rows) + "\n")  # a row has its commas.
    proc = dsstar("describe", str(data), cwd=tmp_path)
    assert "50 data rows" in proc.stdout and "Broken quoting" not in proc.stdout
