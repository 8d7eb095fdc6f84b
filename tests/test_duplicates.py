"""Files holding the same data are said to (analyzer/duplicates.py): identical bytes, the same rows
re-saved (line endings, CSV as XLSX), a cut copy (a prefix of another table's rows) and a subset.
Lab: two identical 6,658-row files were described as unrelated, and a model chose a 37-row cut copy
of a 50-row file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dsstar_cli.analyzer import analyze_folder
from dsstar_cli.analyzer.cache import DescriptionCache
from dsstar_cli.analyzer.limits import AnalyzerLimits


def describe(data: Path, cache: DescriptionCache | None = None) -> dict:
    return {f.path: f for f in analyze_folder(data, AnalyzerLimits(), lambda event: None, "builtin", cache=cache)}


def first_lines(text: str, n: int = 3) -> str:
    """What survives a cut at the size cap: the description's start."""
    return "\n".join(text.splitlines()[:n])


def table(rows: int, seed: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"id": range(seed, seed + rows), "city": [("Oslo", "Rome", "Lima")[k % 3] for k in range(rows)],
                         "amount": [round(10 + k * 1.25, 2) for k in range(rows)]})


def test_identical_files_and_a_resaved_table_are_said_to_hold_the_same_data(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    table(60).to_csv(data / "stations.csv", index=False)
    (data / "stations_backup.csv").write_bytes((data / "stations.csv").read_bytes())
    (data / "export").mkdir()  # Three CSVs of one header in one folder would be one dataset.
    (data / "export" / "stations.csv").write_bytes((data / "stations.csv").read_bytes().replace(b"\n", b"\r\n"))
    table(60).to_excel(data / "stations.xlsx", index=False)
    table(60, seed=1000).to_csv(data / "other_stations.tsv", index=False, sep="\t")   # same columns, other rows
    pd.DataFrame({"code": [1, 2]}).to_csv(data / "codes.csv", index=False)
    files = describe(data)
    assert "Identical to stations_backup.csv (the same bytes)" in first_lines(files["stations.csv"].description)
    assert "Identical to stations.csv (the same bytes)" in first_lines(files["stations_backup.csv"].description)
    resaved = first_lines(files["stations.xlsx"].description)
    assert "Same table as export/stations.csv, stations.csv: the same 60 rows" in resaved, resaved
    assert "Same table as" in first_lines(files["export/stations.csv"].description)
    for unrelated in ("other_stations.tsv", "codes.csv"):
        text = files[unrelated].description
        assert "Identical" not in text and "Same table" not in text and "cut cop" not in text.lower(), text


def test_a_cut_copy_and_a_subset_are_flagged_on_both_sides(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    full = table(50)
    full.to_csv(data / "payments.csv", index=False)
    full.head(37).to_csv(data / "payments_final.csv", index=False)         # the cut copy a model chose
    (data / "samples").mkdir()  # Three CSVs of one header in one folder would be one dataset.
    full.sample(12, random_state=3).to_csv(data / "samples" / "payments.csv", index=False)
    files = describe(data)
    cut = first_lines(files["payments_final.csv"].description)
    assert "A cut copy of payments.csv: its 37 rows are the first 37 of payments.csv's 50" in cut, cut
    subset = first_lines(files["samples/payments.csv"].description)
    assert "Its 12 rows are all among payments.csv's 50 rows" in subset, subset
    fuller = first_lines(files["payments.csv"].description)
    assert "payments_final.csv (its first 37 of 50 rows)" in fuller and "samples/payments.csv (12 of its rows)" in fuller


def test_a_note_depending_on_another_file_is_never_served_stale_from_the_cache(tmp_path):
    """The per-file cache keys on the file alone: a note on another file must be worked out each run."""
    data, cache = tmp_path / "data", DescriptionCache(tmp_path / "cache")
    data.mkdir()
    table(40).to_csv(data / "a.csv", index=False)
    table(40).to_csv(data / "b.csv", index=False)
    assert "Identical to b.csv" in describe(data, cache)["a.csv"].description
    table(40, seed=500).to_csv(data / "b.csv", index=False)                # b changes; a does not
    again = describe(data, cache)["a.csv"]
    assert again.cached and "Identical" not in again.description, again.description
    table(40).head(30).to_csv(data / "b.csv", index=False)                 # b becomes a cut copy of a
    third = describe(data, cache)["a.csv"]
    assert third.cached and "b.csv (its first 30 of 40 rows)" in third.description, third.description


def test_a_dataset_says_which_of_its_members_repeat_others(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for month in (1, 2, 3):
        table(20, seed=100 * month).to_csv(data / f"sales_2024_{month:02d}.csv", index=False)
    (data / "sales_2024_04.csv").write_bytes((data / "sales_2024_03.csv").read_bytes())
    files = describe(data)
    group = next(f for f in files.values() if f.format == "csv dataset")
    head = first_lines(group.description, 2)
    assert "Member sales_2024_03.csv: Identical to sales_2024_04.csv" in head, group.description
    assert "Member sales_2024_04.csv: Identical to sales_2024_03.csv" in head
