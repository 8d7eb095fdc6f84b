"""Many files described as one dataset (analyzer/datasets.py): files of one schema in a folder, and
hive-partitioned folders. The loader each description gives is run here, with DuckDB, as a
generated script would run it."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pandas as pd

from dsstar_cli.analyzer import analyze_folder
from dsstar_cli.analyzer.limits import AnalyzerLimits


def describe(data: Path) -> dict:
    return {f.path: f for f in analyze_folder(data, AnalyzerLimits(), lambda event: None, "builtin")}


def run_loader(description: str, data: Path) -> pd.DataFrame:
    """The description's `duckdb.sql(f"SELECT ... FROM ...")` with `SELECT *`, DATA_DIR filled in."""
    sql = re.search(r'duckdb\.sql\(f"(SELECT \.\.\. FROM .*?)"\)\.df\(\)', description).group(1)
    return duckdb.sql(sql.replace("SELECT ...", "SELECT *").replace("{DATA_DIR}", str(data))).df()


def test_files_of_one_schema_in_a_folder_of_45_are_described_once(tmp_path):
    data = tmp_path / "data"
    (data / "yearly").mkdir(parents=True)
    for year in range(2001, 2023):  # 22 yearly files of one schema, 2 to 4 rows each
        rows = "".join(f"{year},r{k},{year * k}\n" for k in range(2 + year % 3))
        (data / "yearly" / f"sales_{year}.csv").write_text("year,region,sales\n" + rows)
    for i in range(21):
        (data / "yearly" / f"notes_{i}.md").write_text(f"# Note {i}\n")
    (data / "yearly" / "sales_summary.csv").write_text("total\n42\n")   # matches sales_* but another schema
    (data / "yearly" / "regions.csv").write_text("region,name\nr0,North\n")
    files = describe(data)
    groups = [f for f in files.values() if f.format == "csv dataset"]
    assert len(groups) == 1 and len(files) == 45 - 22 + 1, sorted(files)
    group = groups[0]
    assert group.path == "yearly/sales_20*.csv" and "sales_2001.csv" not in files
    text = group.description
    expected = sum(2 + year % 3 for year in range(2001, 2023))
    assert text.startswith("Dataset of 22 csv files (one schema)") and f"{expected} rows in all (exact)" in text
    assert "sales_2001.csv 2, sales_2002.csv 3, sales_2003.csv 4," in text             # per-file row counts
    assert "- region:" in text and "- sales:" in text                # the shared columns
    assert group.size_bytes == sum(p.stat().st_size for p in (data / "yearly").glob("sales_20*.csv"))
    loaded = run_loader(text, data)
    assert len(loaded) == expected and set(loaded["year"]) == set(range(2001, 2023))
    assert "total" not in loaded.columns                             # sales_summary.csv is not a member
    assert files["yearly/sales_summary.csv"].format == "csv" and files["yearly/regions.csv"].format == "csv"


def test_members_no_glob_can_name_are_listed(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("a_1.csv", "a_2.csv", "a_3.csv"):
        (data / name).write_text("x,y\n1,2\n")
    (data / "a_x.csv").write_text("other\n1\n")
    group = next(f for f in describe(data).values() if f.format == "csv dataset")
    assert "a_1.csv" in group.description and len(run_loader(group.description, data)) == 3


def test_a_hive_partitioned_parquet_folder_is_one_dataset_with_its_partition_columns(tmp_path):
    data = tmp_path / "data"
    total = 0
    for year in (2023, 2024):
        for month in ("01", "02", "03"):
            folder = data / "events" / f"year={year}" / f"month={month}"
            folder.mkdir(parents=True)
            for part in range(2):
                rows = 10 + part
                pd.DataFrame({"amount": [float(year)] * rows, "country": ["DE"] * rows}).to_parquet(
                    folder / f"part-{part}.parquet")
                total += rows
    (data / "readme.md").write_text("# Events\n")
    files = describe(data)
    assert sorted(files) == ["events/**/*.parquet", "readme.md"]
    group = files["events/**/*.parquet"]
    text = group.description
    assert group.format == "parquet dataset" and "hive-partitioned by year, month" in text
    assert f"{total} rows in all (exact)" in text and "Dataset of 12 parquet files" in text
    assert "year (2 values: 2023, 2024); month (3 values: 01, 02, 03)" in text
    assert "year=2023/month=01/part-1.parquet 11" in text
    loaded = run_loader(text, data)
    assert len(loaded) == total and {"year", "month", "amount"} <= set(loaded.columns)
    assert loaded.groupby("year")["amount"].first().to_dict() == {2023: 2023.0, 2024: 2024.0}


def test_the_prompt_steers_to_duckdb_only_when_data_is_too_big_for_pandas():
    from dsstar_cli.analyzer import FileDescription
    from dsstar_cli.analyzer.retriever import Selection, files_prompt

    small = FileDescription("sales.csv", "csv", 10_000, "builtin", "Delimited text; 100 data rows.")
    big = FileDescription("payments.csv", "csv", 2 * 1024**3, "builtin", "Delimited text; about 51,200,000 ...")
    assert "DuckDB" not in files_prompt(Selection([small]))
    prompt = files_prompt(Selection([small, big]))
    assert prompt.startswith("Note: payments.csv is too big to load whole with pandas")
    assert "FROM read_csv('{DATA_DIR}/payments.csv')" in prompt and "## payments.csv (csv, 2.0 GB)" in prompt
    assert "add nrows=" in prompt  # The file's own pandas loader is for a sample only.


def test_the_debugger_is_steered_to_duckdb_after_a_memory_error():
    from dsstar_cli.roles import debugger
    from dsstar_cli.roles.context import RunContext

    def error_shown(error: str) -> str:
        return debugger.messages(RunContext("files", "brief", "/data"), "import pandas", error)[-1]["content"]

    memory = 'Traceback (most recent call last):\n  File "s.py", line 2, in <module>\nMemoryError\n'
    assert "query them in place with DuckDB" in error_shown(memory)
    assert "DuckDB" not in error_shown("KeyError: 'amount'")


def test_a_file_the_hive_glob_would_also_read_makes_the_loader_list_the_members(tmp_path):
    data = tmp_path / "data"
    for year in (2023, 2024):
        (data / "sales" / f"year={year}").mkdir(parents=True)
        (data / "sales" / f"year={year}" / "part-0.csv").write_text("amount\n1\n2\n")
    (data / "sales" / "summary.csv").write_text("total\n6\n")
    group = describe(data)["sales/**/*.csv"]
    assert "year=2023/part-0.csv" in group.description.split("Load them together")[1]
    assert len(run_loader(group.description, data)) == 4


def test_a_damaged_member_is_named_and_the_others_still_described(tmp_path):
    data = tmp_path / "data"
    for month in ("01", "02", "03"):
        (data / "t" / f"month={month}").mkdir(parents=True)
        pd.DataFrame({"x": [1, 2]}).to_parquet(data / "t" / f"month={month}" / "part-0.parquet")
    (data / "t" / "month=02" / "part-0.parquet").write_bytes(b"PAR1 not really parquet")
    group = describe(data)["t/**/*.parquet"]
    assert "Unreadable members (1; not counted): t/month=02/part-0.parquet" in group.description
    assert "about 4 rows in all" in group.description and "- x:" in group.description


def test_few_valued_columns_are_counted_across_every_member_with_their_spellings(tmp_path):
    """Lab: 'no' (622), 'yes' (28) from the first member while later members spelled 'Yes' and 'YES':
    a script matching 'yes' as described missed them."""
    data = tmp_path / "data"
    data.mkdir()
    spellings = {"2021": ("no", "yes"), "2022": ("no", "yes"), "2023": ("No", "Yes"), "2024": ("NO", "YES")}
    for year, (no, yes) in spellings.items():
        rows = [f"{year}-{k:03d},{yes if k % 5 == 0 else no},{k}" for k in range(40)]
        (data / f"inspections_{year}.csv").write_text("id,violation,score\n" + "\n".join(rows) + "\n")
    text = describe(data)["inspections_202*.csv"].description
    across = text[text.index("Few-valued text columns across all 4 members"):]
    line = next(line for line in across.splitlines() if line.startswith("- violation:"))
    for value, count in (("no", 64), ("yes", 16), ("No", 32), ("Yes", 8), ("NO", 32), ("YES", 8)):
        assert f"{value!r} ({count})" in line, line
    assert "values differ in case across members" in line and "compare case-insensitively" in line
    assert "'Yes', 'No' in inspections_2023.csv" in line or "'No', 'Yes' in inspections_2023.csv" in line, line
    assert "- id:" not in across.split("Every member")[0]             # many-valued: not a few-valued column
    assert text.index("Few-valued text columns") < text.index("Every member has the columns")


def test_members_spelling_one_value_alike_get_no_note(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for part in range(3):
        (data / f"part_{part}.csv").write_text("flag,x\n" + "".join(f"{'on' if k % 2 else 'off'},{k}\n" for k in range(9)))
    text = describe(data)["part_*.csv"].description
    assert "- flag: 'on' (12), 'off' (15)." in text or "- flag: 'off' (15), 'on' (12)." in text, text
    assert "differ in" not in text


def test_values_across_members_leave_out_title_and_footnote_rows(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for region, status in (("north", "Open"), ("south", "open"), ("east", "OPEN")):
        # Read with nrows and no skipfooter, the footnote would be a value of the first column.
        rows = "".join(f"{status if k % 2 else 'Closed'},{region}-{k}\n" for k in range(8))
        (data / f"sites_{region}.csv").write_text(f"Sites by region\n\nstatus,site\n{rows}\nSource: the agency\n")
    text = describe(data)["sites_*.csv"].description
    line = next(line for line in text.splitlines() if line.startswith("- status: "))
    assert "'Closed' (12)" in line and "'open' (4)" in line and "Source" not in line, text
    assert "values differ in case across members: 'Open' / 'open' / 'OPEN'" in line or \
        "values differ in case across members" in line and "'OPEN'" in line, line


def test_a_member_in_another_encoding_is_read_with_its_own(tmp_path):
    """One cp1252 member (a curly apostrophe, byte 0x92) among UTF-8 ones: the dataset was called
    utf-8 and its DuckDB loader stopped on that member. Now each member is read with its encoding."""
    data = tmp_path / "data"
    data.mkdir()
    for year in range(2018, 2024):
        rows = "year,name,count\n" + "".join(f"{year},Store {i},{i * 10}\n" for i in range(50))
        if year == 2022:
            (data / f"sales_{year}.csv").write_bytes((rows + f"{year},O\u2019Brien\u2019s,5\n").encode("cp1252"))
        else:
            (data / f"sales_{year}.csv").write_text(rows, encoding="utf-8")
    group, = [f for f in describe(data).values() if f.format == "csv dataset"]
    assert "sales_2022.csv is cp1252" in group.description
    statement = re.search(r"one table \(column filename names the member\): (.*?)\.\n", group.description).group(1)
    setup, _, call = statement.rpartition("; ")
    scope = {"pd": pd, "os": __import__("os"), "glob": __import__("glob"), "DATA_DIR": str(data)}
    exec(setup, scope)
    loaded = eval(call, scope)
    assert len(loaded) == 301 and "O\u2019Brien\u2019s" in set(loaded["name"])
