"""The correctness corpus (tests/corpus/): every description's loader, run exactly as written in
the description, loads the table a careful analyst would — the columns, row count and key dtypes
in tests/corpus/manifest.json. Files in real-world shapes: pandas-index headers, ';' with decimal
commas, header-less files, comment lines, title rows and footnotes, latin-1, quoted newlines,
header-less Excel lists, HTML headers as pd.read_html gives them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, TESTS
from dsstar_cli.analyzer import describe_file
from dsstar_cli.analyzer.limits import AnalyzerLimits

CORPUS = TESTS / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
SHARED = ROOT.parent / "shared" / "benchmarks"
KINDS = {"int": pd.api.types.is_integer_dtype, "float": pd.api.types.is_float_dtype,
         "bool": pd.api.types.is_bool_dtype,
         "str": lambda s: pd.api.types.is_object_dtype(s) or pd.api.types.is_string_dtype(s)}


def call_at(text: str, start: int) -> str:
    """The call starting at `start` (`pd.read_csv(...)`), up to its balanced closing parenthesis;
    a trailing `[k]` index is kept."""
    depth, quote = 0, None
    for i in range(start, len(text)):
        c = text[i]
        if quote:
            if c == "\\":
                continue
            if c == quote and text[i - 1] != "\\":
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                end = i + 1
                index = re.match(r"\[[^\]]+\]", text[end:])
                return text[start:end + (index.end() if index else 0)]
    raise AssertionError(f"unbalanced loader in: {text[start:start + 200]}")


def loader_for(description: str, table) -> str:
    """The loader the description gives for the table: the file's `Load with` call, or the named
    sheet's, or the numbered HTML table's."""
    if isinstance(table, str):  # Excel sheet
        line = next(line for line in description.splitlines() if line.startswith(f"Sheet {table!r}:"))
        return call_at(line, line.index("Load with ") + len("Load with "))
    if isinstance(table, int):  # HTML table k
        line = next(line for line in description.splitlines() if line.startswith(f"Table {table} "))
        return call_at(line, line.index("pd.read_html"))
    return call_at(description, description.index("Load with ") + len("Load with "))


def load_as_described(path: Path, table=None) -> tuple[str, pd.DataFrame]:
    description = describe_file(path.parent, Path(path.name), AnalyzerLimits(), "builtin", None).description
    loader = loader_for(description, table)
    frame = eval(loader, {"pd": pd, "json": json, "path": path})  # noqa: S307 - the description's own loader
    return description, frame


def claimed_rows(description: str, table) -> int:
    """The row count the description states for the table."""
    if isinstance(table, str):
        text = next(line for line in description.splitlines() if line.startswith(f"Sheet {table!r}:"))
    elif isinstance(table, int):
        text = next(line for line in description.splitlines() if line.startswith(f"Table {table} "))
    else:
        text = description
    found = re.search(r"([\d,]+) (?:data )?(?:rows?|records?)\b", text)
    assert found, f"no row count in: {text[:200]}"
    return int(found.group(1).replace(",", ""))


def check(frame: pd.DataFrame, columns: list[str], rows: int, dtypes: dict[str, str]) -> None:
    assert [str(c) for c in frame.columns] == columns
    assert len(frame) == rows
    for column, kind in dtypes.items():
        series = frame[frame.columns[[str(c) for c in frame.columns].index(column)]]
        assert KINDS[kind](series), f"{column}: {series.dtype}, expected {kind}"


@pytest.mark.parametrize("entry", MANIFEST, ids=[f"{e['file']}:{e.get('table', '')}" for e in MANIFEST])
def test_the_described_loader_loads_the_table(entry):
    description, frame = load_as_described(CORPUS / "files" / entry["file"], entry.get("table"))
    check(frame, entry["columns"], entry["rows"], entry["dtypes"])
    assert claimed_rows(description, entry.get("table")) == entry["rows"]
    if isinstance(entry.get("table"), int):  # The header shown is the one pd.read_html gives.
        line = next(line for line in description.splitlines() if line.startswith(f"Table {entry['table']} "))
        assert line.split("columns: ", 1)[1].startswith(", ".join(repr(c) for c in entry["columns"]))


def test_the_corpus_covers_dozens_of_shapes():
    assert len(MANIFEST) >= 30 and len({e["file"] for e in MANIFEST}) >= 30


needs_shared = pytest.mark.skipif(not SHARED.exists(), reason="../shared is absent")


@needs_shared
@pytest.mark.parametrize("name, columns, rows", [
    ("acquirer_countries.csv", ["acquirer", "country_code"], 8),
    ("merchant_category_codes.csv", ["mcc", "description"], 769),
])
def test_dabstep_pandas_index_files(name, columns, rows):
    _, frame = load_as_described(SHARED / "dabstep/data" / name)
    assert list(frame.columns) == columns and len(frame) == rows


@needs_shared
def test_legal_html_header_is_what_read_html_gives():
    description, frame = load_as_described(SHARED / "kramabench/legal/input/metropolitan_statistics.html", 1)
    assert "'2024 estimate'" in description and "2024estimate" not in description
    assert list(frame.columns)[:3] == ["Metropolitan statistical area", "2024 estimate", "2020 census"]


@needs_shared
def test_biomedical_headerless_gene_list():
    path = SHARED / "kramabench/biomedical/input/1-s2.0-S0092867420301070-mmc3.xlsx"
    _, frame = load_as_described(path, "B-SE-proteomics")
    whole = pd.read_excel(path, sheet_name="B-SE-proteomics", header=None)
    assert list(frame.columns) == [0] and len(frame) == len(whole) and frame.iloc[0, 0] == whole.iloc[0, 0]


def describe(path: Path) -> str:
    return describe_file(path.parent, Path(path.name), AnalyzerLimits(), "builtin", None).description


def test_encoding_is_claimed_as_it_is():
    files = CORPUS / "files"
    assert "encoding utf-8;" in describe(files / "plain.csv") and "utf-8-sig" not in describe(files / "plain.csv")
    assert "encoding utf-8 with BOM;" in describe(files / "utf8_bom.csv")
    assert "encoding='latin-1'" in describe(files / "latin1.csv")
    assert "encoding='cp1252'" in describe(files / "cp1252.csv")


def test_whole_reads_are_not_called_samples_and_samples_say_first_n_of_m(tmp_path, monkeypatch):
    from dsstar_cli.analyzer import csv_profiler, excel_profiler

    small = describe(CORPUS / "files" / "plain.csv")
    assert "30 data rows. Load" in small and "figures from" not in small
    path = tmp_path / "long.csv"
    path.write_text("n,sq\n" + "".join(f"{i},{i * i}\n" for i in range(500)))
    monkeypatch.setattr(csv_profiler, "SAMPLE_ROWS", 100)
    d = describe(path)
    assert "500 data rows (counted as lines)" in d and "(figures from the first 100 of 500 rows)" in d
    pd.DataFrame({"n": range(300), "sq": [i * i for i in range(300)]}).to_excel(tmp_path / "long.xlsx", index=False)
    monkeypatch.setattr(excel_profiler, "FULL_SHEET_CELLS", 30)
    d = describe(tmp_path / "long.xlsx")
    assert "300 data rows (per the sheet's dimensions)" in d and "(figures from the first 100 of 300 rows)" in d
    d = describe(CORPUS / "files" / "workbook.xlsx")  # Past the budget, but the sheet ends first: read whole.
    assert "Sheet 'merchants': 10 data rows. Load" in d and "figures from" not in d


def test_one_row_one_column_wording():
    d = describe(CORPUS / "files" / "one_row.csv")
    assert "1 data row. Load" in d and "First row:" in d and "1 data rows" not in d
    d = describe(CORPUS / "files" / "names_list.csv")
    assert "1 column:" in d and "1 columns" not in d


def test_stacked_tables_are_pointed_out(tmp_path):
    path = tmp_path / "stacked.csv"
    path.write_text("Status,# of Reports,Loss\nActive,\"17,336\",$54M\nRetired,\"166,921\",$71M\n,,\n"
                    "Status,# of Reports,Loss\nActive,\"7,292\",$9M\nRetired,\"78,913\",$12M\n")
    d = describe(path)
    assert "The header repeats at data row(s) 3 (0-based): several tables stacked in one." in d
