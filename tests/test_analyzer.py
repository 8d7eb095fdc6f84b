"""Each built-in profiler, the bad files that must not break a run, and the LLM describer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from conftest import SAMPLE_DATA
from dsstar_cli.analyzer import analyze_folder, describe_file
from dsstar_cli.analyzer.discover import list_data_files
from dsstar_cli.analyzer.documents import documents_prompt, full_text
from dsstar_cli.analyzer.limits import AnalyzerLimits
from dsstar_cli.events import Recorder

LIMITS = AnalyzerLimits()


def describe(path: Path, mode: str = "auto", unknown=None):
    return describe_file(path.parent, Path(path.name), LIMITS, mode, unknown)


def test_sample_data_descriptions_hold_what_the_planner_needs():
    rec = Recorder()
    files = {f.path: f for f in analyze_folder(SAMPLE_DATA, LIMITS, rec)}
    assert set(files) == {"transactions.csv", "merchants.xlsx", "categories.json", "business_rules.md"}
    tx = files["transactions.csv"].description
    assert "3,000 data rows" in tx and "status: str; 3 distinct: 'settled'" in tx and "pd.read_csv" in tx
    xlsx = files["merchants.xlsx"].description
    assert "'merchants' (9 rows x 6 columns), 'fx_rates' (13 rows x 3 columns)" in xlsx and "eur_per_unit" in xlsx and "sheet_name='fx_rates'" in xlsx
    assert "risk_level" in files["categories.json"].description
    assert "Premium-tier merchants get a 20 % discount" in files["business_rules.md"].description  # Shown in full.
    assert all(f.method == "builtin" and f.error is None for f in files.values())
    assert rec.kinds() == ["analysis_started"] + ["file_described"] * 4 + ["analysis_done"]


def test_tsv_semicolon_and_cp1252(tmp_path):
    (tmp_path / "a.tsv").write_text("x\ty\n1\t2\n3\t4\n")
    (tmp_path / "b.csv").write_text("name;amount\nA;1,5\nB;2,5\n")
    (tmp_path / "c.csv").write_bytes("city,temp\nZürich,3\nMálaga,18\n".encode("cp1252"))
    (tmp_path / "d.csv").write_bytes("item,price\nbook,“€5”\n".encode("cp1252"))
    assert "separator '\\t'" in describe(tmp_path / "a.tsv").description
    b = describe(tmp_path / "b.csv").description
    assert "separator ';'" in b and "decimal=','" in b and "amount: float64" in b
    c = describe(tmp_path / "c.csv").description  # No byte 0x80-0x9F: latin-1, which cp1252 agrees with.
    assert "encoding latin-1" in c and "Zürich" in c and "encoding='latin-1'" in c
    d = describe(tmp_path / "d.csv").description  # Curly quotes and the euro sign exist only in cp1252.
    assert "encoding cp1252" in d and "“€5”" in d and "encoding='cp1252'" in d


def test_json_nested_and_jsonl(tmp_path):
    (tmp_path / "n.json").write_text(json.dumps({"meta": {"v": 2}, "items": [{"id": 1, "tags": ["a"]}, {"id": 2}]}))
    (tmp_path / "r.jsonl").write_text('{"a": 1, "b": "x"}\n{"a": 2, "b": "y"}\nnot json\n')
    n = describe(tmp_path / "n.json").description
    assert "$.meta.v: integer" in n and "$.items: array of 2" in n and "2 records at $.items" in n
    r = describe(tmp_path / "r.jsonl").description
    assert "3 records" in r and "1 of the first 3 lines are not valid JSON" in r and "- a: int64" in r


def test_a_column_of_lists_says_how_many_are_empty_and_what_they_hold(tmp_path):
    """Rules whose list fields are often empty (meaning 'any value', like null): the description
    counts the empty lists and the values inside the others, so a plan need not guess either."""
    rules = [{"id": i, "account_type": [] if i % 3 == 0 else (["R", "D"] if i % 3 == 1 else ["H"])}
             for i in range(30)]
    (tmp_path / "rules.json").write_text(json.dumps(rules))
    d = describe(tmp_path / "rules.json").description
    assert "- account_type: object; lists; 10 empty, 1-2 items in the others; 3 distinct items: 'R' (10), " \
           "'D' (10), 'H' (10)" in d, d


def test_excel_every_sheet_and_formulas_as_values(tmp_path):
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "data"
    ws.append(["q", "v"])
    ws.append([1, 10])
    ws.append([2, "=B2*2"])
    wb.create_sheet("notes").append(["just a note"])
    wb.save(tmp_path / "w.xlsx")
    d = describe(tmp_path / "w.xlsx").description
    assert "2 sheet(s): 'data' (3 rows x 2 columns), 'notes'" in d and "Sheet 'notes'" in d


def test_a_document_is_kept_whole_and_one_beyond_the_read_limit_gets_an_outline(tmp_path):
    body = "\n".join(f"# Chapter {i}\n" + "words " * 200 for i in range(30))  # ~36 KB: over the table cap
    (tmp_path / "doc.md").write_text(body)
    doc = describe(tmp_path / "doc.md")
    assert full_text(doc) == body.strip() and len(doc.description) > LIMITS.max_description_chars
    huge = describe_file(tmp_path, Path("doc.md"), AnalyzerLimits(max_text_bytes=5000), "auto", None).description
    assert "too long to show in full" in huge and "line 1: # Chapter 0" in huge and len(huge) <= 3000


def test_a_long_document_in_a_prompt_shows_its_outline_and_the_sections_the_question_hits(tmp_path):
    chapters = [f"# Chapter {i}\n" + "filler text " * 150 for i in range(30)]
    chapters[17] = "# Chapter 17: fees\nThe fee is fixed_amount + rate * eur_amount / 10000. " + "x " * 300
    (tmp_path / "manual.md").write_text("\n".join(chapters))
    doc = describe(tmp_path / "manual.md")
    whole = documents_prompt([doc], "What fee applies to a payment?", 200_000)
    assert "(in full)" in whole and "Chapter 3\nfiller" in whole
    part = documents_prompt([doc], "What fee applies to a payment?", 8000)
    assert len(part) < 8500 and "line 35: # Chapter 17: fees" in part  # The outline names every chapter,
    assert "rate * eur_amount / 10000" in part and "Chapter 3\nfiller" not in part  # and only the hit is in full.


@pytest.mark.parametrize("name, content, expected", [
    ("empty.csv", b"", "the file is empty"),
    ("binary.csv", b"\x00\x01\x02\x03" * 100, "binary data"),
    ("truncated.json", b'{"a": [1, 2', "invalid JSON"),
    ("broken.xlsx", b"PK\x03\x04 not really a zip", "not a readable Excel workbook"),
    ("empty.md", b"", "the file is empty"),
    ("nothing.jsonl", b"\n\n", "no JSON lines"),
])
def test_bad_files_get_a_description_that_says_what_is_wrong(tmp_path, name, content, expected):
    (tmp_path / name).write_bytes(content)
    result = describe(tmp_path / name)
    assert expected in result.description and result.error


def test_invalid_utf8_text_is_still_described(tmp_path):
    (tmp_path / "t.txt").write_bytes(b"hello \xff\xfe world\n")
    assert "hello" in describe(tmp_path / "t.txt").description


def test_wide_csv_is_capped(tmp_path):
    frame = pd.DataFrame([[i] * 2000 for i in range(3)], columns=[f"c{i}" for i in range(2000)])
    frame.to_csv(tmp_path / "wide.csv", index=False)
    d = describe(tmp_path / "wide.csv").description
    # The names are structure (kept up to twice the cap); statistics and sample rows give way first.
    assert "2000 columns: c0, c1," in d and len(d) <= 2 * LIMITS.max_description_chars and "size cap" in d
    # Past the cap, the structure still leaves a third of it for a few columns' statistics.
    assert "First 3 rows" not in d and "In detail" in d and "left out to fit the size cap: sample rows" in d


def test_a_workbook_shows_every_sheets_columns_before_any_sheets_samples(tmp_path):
    """Seven sheets do not fit the cap whole: what goes is sample rows and statistics (from the
    last sheet back), never a later sheet's load call or column names."""
    with pd.ExcelWriter(tmp_path / "book.xlsx") as writer:
        for k in range(7):
            pd.DataFrame({f"s{k}_col{i}": [f"value {k}-{i}-{r} " * 3 for r in range(20)] for i in range(12)}).to_excel(
                writer, sheet_name=f"sheet{k}", index=False)
    d = describe(tmp_path / "book.xlsx").description
    for k in range(7):
        assert f"Load with pd.read_excel(path, sheet_name='sheet{k}')" in d and f"s{k}_col11" in d
    assert len(d) <= LIMITS.max_description_chars and "[left out to fit the size cap: " in d
    assert "size cap ...]" not in d  # Nothing was cut mid-text.


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path):
    path = tmp_path / "secret.csv"
    path.write_text("a\n1\n")
    path.chmod(0)
    assert "permission denied" in describe(path).description


def test_discovery_skips_hidden_and_vcs_and_survives_symlink_loops(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("x")
    (tmp_path / ".hidden.csv").write_text("a\n1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data.csv").write_text("a\n1\n")
    (tmp_path / "sub" / "loop").symlink_to(tmp_path / "sub")
    (tmp_path / "top.txt").write_text("hi")
    assert list_data_files(tmp_path) == [Path("sub/data.csv"), Path("top.txt")]


def test_unknown_format_uses_the_describer_in_auto_and_metadata_in_builtin(tmp_path):
    (tmp_path / "blob.xyz").write_bytes(b"XYZ1" + bytes(range(40)))
    seen = []

    def describer(path, name):
        seen.append(name)
        return "an XYZ container with 1 record"

    auto = describe(tmp_path / "blob.xyz", "auto", describer)
    assert (auto.method, auto.description, seen) == ("llm", "an XYZ container with 1 record", ["blob.xyz"])
    builtin = describe(tmp_path / "blob.xyz", "builtin", describer)
    assert builtin.method == "metadata" and "58 59 5a 31" in builtin.description and seen == ["blob.xyz"]


def test_llm_describer_writes_runs_and_repairs_a_script(tmp_path, config):
    from dsstar_cli.agent import Agent
    from dsstar_cli.analyzer.llm_describer import LLMDescriber
    from dsstar_cli.model import Models, ScriptedModel
    from dsstar_cli.sandbox import Executor

    data = tmp_path / "d"
    data.mkdir()
    (data / "points.geo").write_bytes(b"GEO\x00\x01\nPOINT 1 2\nPOINT 3 4\n")  # Binary: text needs no model.
    model = ScriptedModel({
        "analyzer": ["```python\nimport sys\nprint(open(sys.argv[1]).read())\n```"],  # argv is wrong: fails
        "debugger": [f"```python\nlines = [l for l in open(r'{data}/points.geo').read().splitlines() if l[:5] == 'POINT']\n"
                     "print(f'{len(lines)} POINT records with x y coordinates')\n```"],
    })
    agent = Agent(Models(model), Executor(tmp_path / "work", data, timeout_s=30), Recorder(), None, 2)
    files = analyze_folder(data, LIMITS, Recorder(), "auto", LLMDescriber(agent, 3000))
    assert files[0].method == "llm" and files[0].description == "2 POINT records with x y coordinates"
    assert [role for role, _ in model.calls] == ["analyzer", "debugger"]


def test_title_rows_footnotes_and_thousands_separators_are_found(tmp_path):
    path = tmp_path / "report.csv"
    path.write_text('Fraud Reports by State,,\n,,\nState,# of Reports,Rank\n'
                    + "".join(f'S{i},"{1000 + i * 1237:,}",{i}\n' for i in range(1, 41))
                    + ',,\n"Source: Consumer Sentinel Network Data Book 2024",,\n')
    d = describe(path).description
    assert "The real header is on line 3; title rows above it: 'Fraud Reports by State'" in d
    assert "2 footnote row(s) below the table: 'Source: Consumer Sentinel" in d
    assert "40 data rows" in d and "thousands=','" in d
    assert "# of Reports: int64" in d and "Source" not in d.split("columns:")[1]
    loader = d.split("Load with ")[1].split(".\n")[0]
    frame = eval(loader, {"pd": pd, "path": path})  # The loader the description gives really works.
    assert list(frame.columns) == ["State", "# of Reports", "Rank"] and len(frame) == 40
    assert frame["# of Reports"].sum() == sum(1000 + i * 1237 for i in range(1, 41))


def test_a_footnote_that_defines_a_term_is_shown_whole(tmp_path):
    """Footnotes carry definitions; one cut at 150 characters hid whether Micropolitan areas count."""
    definition = ("Metropolitan Areas are defined by the Office of Management and Budget and population figures "
                  "are based on 2023 census estimates; Micropolitan Statistical Areas are listed with them but "
                  "are not metropolitan areas and are ranked separately.")
    path = tmp_path / "areas.csv"
    path.write_text("Area,Reports\n" + "".join(f"Area {i},{i * 10}\n" for i in range(1, 30))
                    + f',\n"{definition}",\n')
    d = describe(path).description
    assert definition in d


def test_plain_csv_gets_no_layout_notes():
    d = describe(SAMPLE_DATA / "transactions.csv").description
    assert "title rows" not in d and "footnote" not in d and "thousands" not in d


@pytest.mark.skipif(not (SAMPLE_DATA.parent.parent / "shared").exists(), reason="../shared is absent")
def test_kramabench_legal_title_row_csv():
    folder = SAMPLE_DATA.parent.parent / "shared/benchmarks/kramabench/legal/input/csn-data-book-2024-csv/CSVs"
    d = describe(folder / "2024_CSN_Major_Data_Contributors.csv").description
    assert "The real header is on line 3" in d and "skiprows=2" in d and "footnote" in d
