"""Every format the analyzer knows, the bad files that must not break a run, the description cache
and the retriever. Files are generated here, so the tests need nothing beyond the repository."""

from __future__ import annotations

import re

import bz2
import gzip
import json
import os
import sqlite3
import struct
import zipfile
import zlib
from pathlib import Path

import pandas as pd
import pytest

from conftest import tree_bytes
from dsstar_cli.analyzer import analyze_folder, describe_file
from dsstar_cli.analyzer import csv_profiler
from dsstar_cli.analyzer.cache import DescriptionCache
from dsstar_cli.analyzer.limits import AnalyzerLimits
from dsstar_cli.analyzer.retriever import Selection, bm25_scores, files_prompt, select_files
from dsstar_cli.events import Recorder

LIMITS = AnalyzerLimits()


def describe(path: Path, mode: str = "builtin"):
    return describe_file(path.parent, Path(path.name), LIMITS, mode, None)


def sales_frame() -> pd.DataFrame:
    return pd.DataFrame({"region": ["north", "south", "east"] * 40, "units": range(120),
                         "price_eur": [9.5, 12.0, 3.25] * 40})


# -- formats ---------------------------------------------------------------------------------------

def test_parquet_schema_and_exact_rows_from_metadata(tmp_path):
    sales_frame().to_parquet(tmp_path / "sales.parquet", row_group_size=50)
    d = describe(tmp_path / "sales.parquet")
    assert d.format == "parquet" and d.error is None
    assert "120 rows (exact, from the metadata) in 3 row group(s)" in d.description
    assert "price_eur: double" in d.description and "pd.read_parquet(path)" in d.description
    assert "region: str; 3 distinct" in d.description or "region: object; 3 distinct" in d.description


def test_feather(tmp_path):
    sales_frame().to_feather(tmp_path / "sales.feather")
    d = describe(tmp_path / "sales.feather")
    assert d.format == "feather" and "120 rows (exact)" in d.description and "pd.read_feather" in d.description


def test_sqlite_tables_columns_counts_and_the_folder_is_untouched(tmp_path):
    db = tmp_path / "shop.sqlite"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL)")
        connection.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(i, f"c{i % 5}", i * 1.5) for i in range(42)])
        connection.execute("CREATE VIEW big AS SELECT * FROM orders WHERE total > 30")
    connection.close()
    before = tree_bytes(tmp_path)
    d = describe(db)
    assert d.format == "sqlite" and d.error is None
    assert "Table 'orders': 42 rows; columns: id INTEGER PRIMARY KEY, customer TEXT, total REAL" in d.description
    assert "View 'big'" in d.description and "mode=ro" in d.description
    assert tree_bytes(tmp_path) == before and sorted(p.name for p in tmp_path.iterdir()) == ["shop.sqlite"]


def test_sqlite_recognised_by_content_whatever_its_name(tmp_path):
    with sqlite3.connect(tmp_path / "store.bin") as connection:
        connection.execute("CREATE TABLE t (x)")
    connection.close()
    d = describe(tmp_path / "store.bin")
    assert d.format == "sqlite" and "Table 't': 0 rows" in d.description


def test_html_outline_and_tables(tmp_path):
    rows = "".join(f"<tr><td>City {i}</td><td>{1000 + i:,}</td></tr>" for i in range(25))
    (tmp_path / "page.html").write_text(
        "<html><head><title>Cities</title></head><body>\n<h1>Big cities</h1>\n<p>Intro</p>\n<h2>Table</h2>\n"
        f"<table><caption>Population</caption><tr><th>City</th><th>People</th></tr>{rows}</table></body></html>")
    d = describe(tmp_path / "page.html")
    assert d.format == "html" and "title 'Cities'" in d.description and "1 table(s)" in d.description
    assert "line 2: h1 Big cities" in d.description and "line 4: h2 Table" in d.description
    assert "caption 'Population', 25 rows x 2 columns; columns: 'City', 'People'" in d.description
    assert "['City 0', 1000]" in d.description and "pd.read_html" in d.description
    assert len(pd.read_html(tmp_path / "page.html")) == 1  # The loader the description names works (lxml).


@pytest.mark.parametrize("suffix, opener", [(".gz", gzip.open), (".bz2", bz2.open)])
def test_compressed_csv_is_described_as_its_inner_format(tmp_path, suffix, opener):
    path = tmp_path / f"sales.csv{suffix}"
    with opener(path, "wt") as out:
        sales_frame().to_csv(out, index=False)
    d = describe(path)
    assert d.error is None and "compressed csv file (sales.csv)" in d.description
    assert "120 data rows" in d.description and "units: int64" in d.description
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # Unpacked elsewhere, never here.


def test_zip_lists_members_and_describes_them(tmp_path):
    with zipfile.ZipFile(tmp_path / "bundle.zip", "w") as archive:
        archive.writestr("data/sales.csv", sales_frame().to_csv(index=False))
        archive.writestr("notes.md", "# Notes\nUnits are boxes.\n")
    d = describe(tmp_path / "bundle.zip")
    assert "Zip archive with 2 file(s)" in d.description and "- data/sales.csv (" in d.description
    assert "Member data/sales.csv (csv)" in d.description and "120 data rows" in d.description
    assert "Units are boxes." in d.description


def test_zip_bomb_is_profiled_from_a_bounded_prefix(tmp_path, monkeypatch):
    from dsstar_cli.analyzer import compressed_profiler

    monkeypatch.setattr(compressed_profiler, "DECOMPRESS_CAP", 64 * 1024)
    with gzip.open(tmp_path / "huge.csv.gz", "wt") as out:
        out.write("a,b\n" + "1,2\n" * 200_000)  # 800 KB unpacked from a few KB.
    d = describe(tmp_path / "huge.csv.gz")
    assert "Profiled from the first 65,536 bytes decompressed (the cap)" in d.description
    assert "about" not in d.description.split("data rows")[0] and "data rows" in d.description


def png_bytes(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\x00" + b"\x80" * width for _ in range(height)))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def test_images_and_pdfs_get_type_and_size_only(tmp_path):
    (tmp_path / "chart.png").write_bytes(png_bytes(40, 30))
    (tmp_path / "report.pdf").write_bytes(b"%PDF-1.7\n" + b"0" * 500)
    png, pdf = describe(tmp_path / "chart.png"), describe(tmp_path / "report.pdf")
    assert png.format == "binary" and "PNG image, 40x30 pixels" in png.description
    assert pdf.format == "binary" and "PDF document" in pdf.description and "509 bytes" in pdf.description


def test_excel_title_rows_merged_cells_and_formula_values(tmp_path):
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "report"
    sheet["A1"] = "Quarterly report 2025"
    sheet.merge_cells("A1:C1")
    sheet.append([])
    sheet.append(["region", "units", "double"])
    for i in range(1, 11):
        sheet.append([f"r{i}", i, f"=B{i + 3}*2"])
    workbook.save(tmp_path / "book.xlsx")
    d = describe(tmp_path / "book.xlsx")
    assert "The real header is on row 3" in d.description and "'Quarterly report 2025'" in d.description
    assert "pd.read_excel(path, sheet_name='report', skiprows=2)" in d.description
    assert "Merged cells (1): A1:C1" in d.description
    assert "region" in d.description and "units: int64" in d.description


# -- bad files -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, content, says", [
    ("empty.csv", b"", "empty"),
    ("truncated.json", b'{"a": [1, 2, {"b": ', "JSON"),
    ("broken.xlsx", b"PK\x03\x04 this is not really a workbook", "Excel"),
    ("binary.csv", bytes(range(256)) * 4, "binary"),
    ("broken.parquet", b"PAR1 not really", "Parquet"),
    ("broken.sqlite", b"SQLite format 3\x00" + b"\xff" * 200, "SQLite"),
    ("broken.gz", b"\x1f\x8b\x08 garbage", "decompress"),
    ("broken.zip", b"PK\x05\x06 nope", "zip"),
])
def test_bad_files_get_a_description_that_says_what_is_wrong(tmp_path, name, content, says):
    (tmp_path / name).write_bytes(content)
    d = describe(tmp_path / name)
    assert d.error and says.lower() in (d.description + d.error).lower(), d.description


def test_invalid_utf8_csv_falls_back_and_says_so(tmp_path):
    (tmp_path / "latin.csv").write_bytes("city,people\nZürich,5\nKöln,7\n".encode("cp1252") + b"\x81x,1\n")
    d = describe(tmp_path / "latin.csv")
    assert d.error is None and ("cp1252" in d.description or "latin-1" in d.description)


def test_ten_thousand_columns_stay_within_the_size_cap(tmp_path):
    header = ",".join(f"c{i}" for i in range(10_000))
    (tmp_path / "wide.csv").write_text(header + "\n" + ",".join("1" for _ in range(10_000)) + "\n")
    d = describe(tmp_path / "wide.csv")
    # Every name that fits the structure's bound (twice the cap), then how many more there are.
    assert d.error is None and "10000 columns: c0, c1," in d.description and re.search(r"and 9,\d\d\d more", d.description)
    assert len(d.description) <= 2 * LIMITS.max_description_chars


def test_symlink_loop_and_dangling_link_do_not_hang_or_crash(tmp_path):
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "a.csv").write_text("x\n1\n")
    os.symlink(data, data / "sub" / "loop")
    os.symlink(data / "missing.csv", data / "dangling.csv")
    results = {f.path: f for f in analyze_folder(data, LIMITS, Recorder(), "builtin")}
    assert results["sub/a.csv"].error is None
    assert results["dangling.csv"].error and "Cannot be read" in results["dangling.csv"].description


def test_large_csv_is_sampled_across_the_file_and_its_rows_estimated(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_profiler, "EXACT_COUNT_UP_TO", 100_000)   # Treat ~1 MB as "large".
    monkeypatch.setattr(csv_profiler, "HEAD_BYTES", 50_000)
    monkeypatch.setattr(csv_profiler, "SAMPLE_ROWS", 1_000)
    with (tmp_path / "big.csv").open("w") as out:
        out.write("id,phase\n")
        for i in range(60_000):
            out.write(f"{i},{'early' if i < 30_000 else 'late'}\n")
    d = describe(tmp_path / "big.csv")
    assert "about " in d.description and "estimated" in d.description and "not counted" in d.description
    estimate = int(d.description.split("about ")[1].split(" data rows")[0].replace(",", ""))
    assert 50_000 < estimate < 70_000
    assert "rows spread through the file" in d.description
    assert "'late'" in d.description  # Only the spread-out blocks reach the second half.


# -- cache -----------------------------------------------------------------------------------------

def analyse(folder: Path, cache_dir: Path, rec: Recorder | None = None):
    return analyze_folder(folder, LIMITS, rec or Recorder(), "builtin", cache=DescriptionCache(cache_dir))


def test_second_analysis_comes_from_the_cache_and_a_changed_file_is_described_again(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text("x,y\n1,2\n")
    (data / "b.json").write_text('{"k": [1, 2, 3]}')
    cache = tmp_path / "cache"
    first = analyse(data, cache)
    assert [f.cached for f in first] == [False, False]
    rec = Recorder()
    second = analyse(data, cache, rec)
    assert [f.cached for f in second] == [True, True] and rec.of("analysis_done")[0]["cached"] == 2
    assert [f.description for f in second] == [f.description for f in first]
    stat = (data / "a.csv").stat()
    (data / "a.csv").write_text("x,z\n1,2\n")  # Same size...
    os.utime(data / "a.csv", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # ...and the same mtime.
    third = {f.path: f for f in analyse(data, cache)}
    assert not third["a.csv"].cached and "- z:" in third["a.csv"].description
    assert third["b.json"].cached


def test_errors_are_not_cached(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "bad.json").write_text("{oops")
    analyse(data, tmp_path / "cache")
    assert not analyse(data, tmp_path / "cache")[0].cached


def test_describe_command_uses_the_xdg_cache_and_no_cache_bypasses_it(tmp_path):
    from test_cli import dsstar

    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text("x,y\n1,2\n")
    first = json.loads(dsstar("describe", str(data), "--json", cwd=tmp_path).stdout)
    assert first["files"][0]["cached"] is False and first["files"][0]["format"] == "csv"
    assert list((tmp_path / "xdg-cache" / "dsstar" / "descriptions").rglob("*.json"))
    second = json.loads(dsstar("describe", str(data), "--json", cwd=tmp_path).stdout)
    assert second["files"][0]["cached"] is True
    bypass = json.loads(dsstar("describe", str(data), "--json", "--no-cache", cwd=tmp_path).stdout)
    assert bypass["files"][0]["cached"] is False
    assert set(first["files"][0]) >= {"path", "format", "size_bytes", "method", "description", "error"}


# -- retriever -------------------------------------------------------------------------------------

def test_bm25_ranks_the_file_named_by_the_question_first():
    docs = ["fraud_rates.csv columns merchant fraud_rate month", "weather.csv columns city temperature",
            "holidays.json list of public holidays by country"]
    scores = bm25_scores("Which merchant had the highest fraud rate?", docs)
    assert scores.index(max(scores)) == 0 and scores[1] == 0


def many_files(tmp_path: Path, count: int) -> Path:
    data = tmp_path / "lake"
    data.mkdir()
    for i in range(count):
        (data / f"table_{i:03d}.csv").write_text(f"station_{i},reading\n1,2\n")
    (data / "identity_theft_by_state.csv").write_text("state,identity_theft_reports\nOhio,120\n")
    return data


def test_retriever_keeps_the_relevant_files_and_lists_the_rest(tmp_path):
    files = analyze_folder(many_files(tmp_path, 120), LIMITS, Recorder(), "builtin")
    selection = select_files(files, "How many identity theft reports came from Ohio?", 100, 1_000_000)
    # Files sharing no term with the question are listed, not described, though the budget holds them.
    assert selection.method == "bm25" and [f.path for f in selection.described] == ["identity_theft_by_state.csv"]
    assert len(selection.listed) == 120
    prompt = files_prompt(selection)
    assert "## Other files in the folder (120, not described here" in prompt
    assert "- (top folder) 120 files: table_000.csv, table_001.csv" in prompt


def test_retriever_finds_the_file_named_for_the_question_among_many_small_look_alikes(tmp_path):
    """Many tiny per-state files share a word or two with the question; the file whose name and
    columns say what is asked must be described, and the look-alikes listed by name."""
    data = tmp_path / "lake"
    (data / "State data").mkdir(parents=True)
    for state in [f"State{i:02d}" for i in range(60)]:
        (data / "State data" / f"{state}.csv").write_text(
            f"Identity Theft Reports in {state}\nMetropolitan Area,Reports\n{state} City,12\n")
    rows = "\n".join(f"{i},Area {i} Metropolitan Statistical Area,{1000 - i}" for i in range(400))
    (data / "Metropolitan_Areas_Identity_Theft_Reports.csv").write_text(f"Rank,Metropolitan Area,# of Reports\n{rows}\n")
    (data / "Fraud_Losses_by_Age.csv").write_text("Age,Losses\n20-29,100\n")
    (data / "rules.md").write_text("# Counting\nA report counts once.\n")
    files = analyze_folder(data, LIMITS, Recorder(), "builtin")
    selection = select_files(files, "Average number of reported identity thefts of metropolitan areas?", 100, 1500)
    described = [f.path for f in selection.described]
    assert described[:2] == ["rules.md", "Metropolitan_Areas_Identity_Theft_Reports.csv"]  # Documents always.
    assert sum(p.startswith("State data/") for p in described) < 10 and "Fraud_Losses_by_Age.csv" not in described
    assert "- State data/" in files_prompt(selection)


def test_retriever_respects_the_token_budget_and_leaves_small_folders_alone(tmp_path):
    files = analyze_folder(many_files(tmp_path, 10), LIMITS, Recorder(), "builtin")
    assert select_files(files, "anything", 100, 1_000_000).method == "all"
    tight = select_files(files, "identity theft in Ohio", 100, 200)
    assert 1 <= len(tight.described) < len(files) and tight.described[0].path == "identity_theft_by_state.csv"


def test_embedding_ranking_and_its_fallback(tmp_path):
    files = analyze_folder(many_files(tmp_path, 5), LIMITS, Recorder(), "builtin")

    def embed(texts):  # A toy embedding: does the text mention theft?
        return [[1.0, 0.0] if "theft" in t else [0.0, 1.0] for t in texts]

    chosen = select_files(files, "identity theft", 2, 1_000_000, embed)
    assert chosen.method == "embedding" and chosen.described[0].path == "identity_theft_by_state.csv"

    def broken(texts):
        raise ConnectionError("embedding server down")

    fallback = select_files(files, "identity theft", 2, 1_000_000, broken)
    assert fallback.method == "bm25" and "embedding server down" in fallback.note
    assert isinstance(fallback, Selection)


def test_an_ask_run_over_a_big_folder_describes_only_the_relevant_files(tmp_path):
    from dsstar_cli.config import load_config
    from dsstar_cli.model import Models, ScriptedModel
    from dsstar_cli.runner import AskRequest, ask

    data = many_files(tmp_path, 120)
    config = load_config(overrides={"run_dir": str(tmp_path / "runs")}, env={}, cwd=tmp_path)
    model = ScriptedModel({"planner": ["Read identity_theft_by_state.csv."],
                           "coder": ["```python\nprint(120)\n```"], "verifier": ["Yes"],
                           "finalizer": ["```python\nprint(120)\n```"]})
    rec = Recorder()
    result = ask(AskRequest(data, "How many identity theft reports came from Ohio?"), config, rec,
                 models=Models(model))
    assert result.answer == "120"
    retrieval = rec.of("retrieval")[0]
    assert retrieval["method"] == "bm25" and retrieval["listed"] == 120
    assert retrieval["described"] == ["identity_theft_by_state.csv"]
    planner_prompt = model.calls[0][1][0]["content"]
    assert "## identity_theft_by_state.csv" in planner_prompt and "## Other files in the folder (120" in planner_prompt
    assert planner_prompt.count("\n## table_") == 0


def test_a_listed_file_gets_a_line_saying_what_it_holds(tmp_path):
    """A small file the budget leaves out of the prompt is still told by its title, rows and
    columns, so the planner can tell it holds the figure without spending a round to look."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "fraud_losses.csv").write_text("Fraud Losses by Age\n,\nAge,Loss\n20,5\n30,7\n")
    (data / "report_count.csv").write_text("Number of Reports by Year\n,\nYear,# of Reports\n2023,10\n2024,12\n")
    files = analyze_folder(data, LIMITS, Recorder(), "builtin")
    selection = select_files(files, "fraud losses by age", 100, 1)  # Room for the best file only.
    assert [f.path for f in selection.listed] == ["report_count.csv"]
    assert "- report_count.csv: 'Number of Reports by Year'; 2 rows; columns Year, # of Reports" in files_prompt(
        selection)


def test_a_wide_table_details_its_few_valued_columns_first(tmp_path):
    """Past 30 columns not every column is detailed: those holding a few values (what a question
    filters on) come first, wherever they stand in the table."""
    frame = pd.DataFrame({f"c{i}": range(20) for i in range(40)})
    frame["c35"] = ["Tumor", "Normal"] * 10
    frame.to_csv(tmp_path / "wide.csv", index=False)
    d = describe(tmp_path / "wide.csv").description
    assert d.index("- c35: ") < d.index("- c0: ") and "'Tumor' (10)" in d


STACKED = ("Losses by Amount,,\n,,\nNumber of Reports,\"2,600\",\nReports with a Loss,987,38% of the total\n,,\n"
           "Losses in $1 - $1000,,\nAmount Lost,# of Reports,\n$1 - $100,\"1,200\",\n$101 - $500,300,\n"
           "$501 - $1000,100,\n,,\nLosses over $1000,,\nAmount Lost,# of Reports,\n$1001 - $5000,80,\n"
           "More than $5000,20,\n,,\nSource: a data book,,\n")


def test_blocks_separated_by_empty_rows_are_told_apart_each_with_a_loader_that_loads_it(tmp_path):
    """A page of a report: label-value rows, then two titled tables. Read as one table the first
    block's values become its header; each block is named, and each table's call loads it."""
    (tmp_path / "stacked.csv").write_text(STACKED)
    d = describe(tmp_path / "stacked.csv").description
    assert "The file holds 3 blocks separated by empty rows" in d
    assert "lines 3-4: Number of Reports | 2,600; Reports with a Loss | 987 | 38% of the total" in d
    calls = re.findall(r"(\d+) row\(s\): (pd\.read_csv\(path, (?:[^()]|\([^()]*\))*\))", d)
    assert [n for n, _ in calls] == ["3", "2"]
    for rows, call in calls:
        frame = eval(call, {"pd": pd, "path": tmp_path / "stacked.csv"})  # noqa: S307 - our own description
        assert len(frame) == int(rows) and list(frame.columns) == ["Amount Lost", "# of Reports"]
    assert frame["# of Reports"].tolist() == [80, 20]


def test_one_table_with_notes_below_is_not_taken_for_blocks(tmp_path):
    (tmp_path / "one.csv").write_text("Title,,\n,,\na,b,c\n1,2,3\n4,5,6\n,,\nNote one,,\nNote two,,\n")
    assert "blocks separated" not in describe(tmp_path / "one.csv").description
