"""Descriptions that say what the values are: numbers loaded with the separators they are written
with (whatever the delimiter, decided from every sampled value), the encoding of the whole file
(not of its first kilobytes), and columns holding one value named with it however the size cap is
fitted. Every file is generated here; loaders are run exactly as the description gives them."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
import pytest

from dsstar_cli.analyzer import csv_profiler
from test_corpus import describe, load_as_described

DELIMITERS = [",", "\t", ";", "|"]


def write_table(path: Path, header: list[str], rows: list[list], delimiter: str, encoding: str = "utf-8") -> Path:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.write_bytes(buffer.getvalue().encode(encoding))
    return path


# --- 1. Thousands and decimal separators, from every value of every column -------------------------

REPORTS = [3512, 719771, 903, 1857, 737, 55457]   # One comma each: 3.512 with decimal=','.
PEOPLE = [1937041, 903, 12345, 2500000, 8812, 737]  # Two commas in some: thousands only.


@pytest.mark.parametrize("delimiter", DELIMITERS)
def test_thousands_commas_load_as_thousands_whatever_the_delimiter(tmp_path, delimiter):
    rows = [[f"Area {i}", f"{r:,}", f"{p:,}"] for i, (r, p) in enumerate(zip(REPORTS * 4, PEOPLE * 4))]
    path = write_table(tmp_path / "reports.csv", ["area", "reports", "people"], rows, delimiter)
    description, frame = load_as_described(path)
    assert "decimal=','" not in description
    assert frame["reports"].tolist() == REPORTS * 4 and frame["people"].tolist() == PEOPLE * 4


@pytest.mark.parametrize("delimiter", ["\t", ";", "|"])
def test_one_value_that_cannot_be_a_decimal_anywhere_in_the_sample_rules_out_decimal_commas(tmp_path, delimiter):
    # 600 rows whose grouped numbers could be read either way (3,512), then one that cannot (1,937,041).
    values = [3512, 903, 719, 4100] * 150 + [1937041]
    rows = [[f"r{i}", f"{v:,}"] for i, v in enumerate(values)]
    description, frame = load_as_described(write_table(tmp_path / "t.csv", ["id", "amount"], rows, delimiter))
    assert frame["amount"].tolist() == values


def loaded_right_or_said(description: str, series: pd.Series, numbers: list, written: list[str]) -> bool:
    """Numbers read as the right numbers, or kept as the text they are and named in the note."""
    if pd.api.types.is_numeric_dtype(series):
        return series.tolist() == numbers
    note = next(line for line in description.splitlines() if line.startswith("Number formats differ"))
    return series.tolist() == written and repr(series.name) in note


@pytest.mark.parametrize("footnote", [False, True], ids=["plain", "footnote"])  # Footnotes: pandas' python engine.
@pytest.mark.parametrize("delimiter", DELIMITERS)
def test_columns_that_write_numbers_differently_are_said_and_none_is_loaded_wrong(tmp_path, delimiter, footnote):
    counts = [1937041, 3512, 903, 12345] * 3
    prices = ["12,50", "3,5", "0,125", "7,25"] * 3  # Decimal commas: they cannot be thousands.
    rows = [[f"{c:,}", p] for c, p in zip(counts, prices)] + ([[""], ["Source: a survey"]] if footnote else [])
    description, frame = load_as_described(write_table(tmp_path / "mixed.csv", ["count", "price"], rows, delimiter))
    assert ("footnote row" in description) == footnote
    assert "Number formats differ between columns" in description and "pd.to_numeric(df[" in description
    assert loaded_right_or_said(description, frame["count"], counts, [f"{c:,}" for c in counts])
    assert loaded_right_or_said(description, frame["price"], [float(p.replace(",", ".")) for p in prices], prices)


def test_european_numbers_load_right_and_dotted_dates_stay_dates(tmp_path):
    rows = [[f"0{d}.02.2024", f"{d},5", f"{d}.234", f"{d}.234.567,25"] for d in range(1, 9)]
    path = write_table(tmp_path / "eu.csv", ["datum", "wert", "menge", "umsatz"], rows, ";")
    _, frame = load_as_described(path)
    assert frame["wert"].tolist() == [d + 0.5 for d in range(1, 9)]
    assert frame["menge"].tolist() == [d * 1000 + 234 for d in range(1, 9)]
    assert frame["umsatz"].tolist() == [d * 1_000_000 + 234_567.25 for d in range(1, 9)]
    assert frame["datum"].tolist() == [f"0{d}.02.2024" for d in range(1, 9)]  # Not 1022024 (thousands='.').


# --- 2. The encoding of every part read, not of the head ---------------------------------------------

def test_a_curly_apostrophe_deep_in_a_file_gives_its_loader_cp1252(tmp_path):
    rows = [[i, f"note {i}", i * 3] for i in range(1, 5000)] + [[5000, "it\u2019s late", 7]]
    path = write_table(tmp_path / "notes.csv", ["id", "note", "value"], rows, ",", "cp1252")  # 0x92, past 80 KB.
    description, frame = load_as_described(path)
    assert "encoding='cp1252'" in description and frame["note"].iloc[-1] == "it\u2019s late"


def test_a_large_file_is_checked_to_its_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_profiler, "EXACT_COUNT_UP_TO", 100_000)  # Treat ~2 MB as large: head and blocks read.
    monkeypatch.setattr(csv_profiler, "HEAD_BYTES", 50_000)
    monkeypatch.setattr(csv_profiler, "SPREAD_BLOCK_BYTES", 16_000)
    monkeypatch.setattr(csv_profiler, "SAMPLE_ROWS", 1_000)
    rows = [[i, f"note {i}", i * 3] for i in range(1, 100_000)] + [[100_000, "it\u2019s the last row", 7]]
    path = write_table(tmp_path / "appended.csv", ["id", "note", "value"], rows, ",", "cp1252")
    assert path.stat().st_size > 20 * 100_000
    description, frame = load_as_described(path)  # Fails with UnicodeDecodeError when described as UTF-8.
    assert "encoding='cp1252'" in description and frame["note"].iloc[-1] == "it\u2019s the last row"


def test_a_byte_cp1252_cannot_decode_late_in_the_file_gives_latin1(tmp_path):
    # Curly quotes near the top, and far below a byte (0x81) that cp1252 leaves undefined: only
    # latin-1 decodes every byte (pandas stops at 0x81 with encoding='cp1252').
    rows = [[1, "\u2018quoted\u2019"]] + [[i, f"note {i}"] for i in range(2, 20_000)]
    path = write_table(tmp_path / "mixed.csv", ["id", "note"], rows, ",", "cp1252")
    path.write_bytes(path.read_bytes() + b"20000,odd \x81 byte\n")
    description, frame = load_as_described(path)
    assert "encoding='latin-1'" in description and len(frame) == 20_000


# --- 3. A column holding one value is named with it, however the cap is fitted ------------------------

def test_a_constant_column_of_a_long_description_is_named_with_its_value(tmp_path):
    # 20 columns of long text: their statistics do not fit the cap and are dropped; the flag is not.
    rows = [[f"{'lorem ipsum dolor sit amet ' * 3}{i}-{j}" for j in range(20)] + ["Y", 2024] for i in range(1200)]
    path = write_table(tmp_path / "long.csv", [f"field_{j}" for j in range(20)] + ["filter_flag", "year"], rows, ",")
    description = describe(path)
    assert "size cap" in description  # The statistics were left out...
    assert "filter_flag = 'Y'" in description and "year = 2024" in description  # ...the constants were not.
    assert "1,200 rows" in description.split("filter_flag")[0].splitlines()[-1]


def test_a_wide_table_names_its_constant_columns_beside_its_few_valued_ones(tmp_path):
    few = [[("a", "b", "c")[(i + j) % 3] for j in range(40)] for i in range(300)]  # 40 few-valued columns first.
    rows = [r + [i, i * 2.5, "Y", ""] for i, r in enumerate(few)]
    header = [f"kind_{j}" for j in range(40)] + ["id", "amount", "flag", "notes"]
    description = describe(write_table(tmp_path / "wide.csv", header, rows, ","))
    assert "flag = 'Y'" in description and "Empty in all 300 rows: notes" not in description
    assert "empty in all 300 rows: notes" in description
    assert len(description) <= 2 * 3000


def test_each_sheet_of_a_workbook_names_its_constant_columns(tmp_path):
    path = tmp_path / "book.xlsx"
    with pd.ExcelWriter(path) as writer:
        for sheet in range(4):
            pd.DataFrame({**{f"text_{j}": [f"{'long value ' * 6}{i}" for i in range(60)] for j in range(12)},
                          "status": ["closed"] * 60, "region": [f"R{i % 40}" for i in range(60)]}
                         ).to_excel(writer, sheet_name=f"s{sheet}", index=False)
    description = describe(path)
    assert "size cap" in description and description.count("status = 'closed'") == 4
