"""What the prompt says of files beyond their full descriptions: the one line a listed file gets,
code and plain text described without a model call, and data files a document names that the
folder lacks."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pandas as pd

from dsstar_cli.analyzer import analyze_folder
from dsstar_cli.analyzer.gist import gist
from dsstar_cli.analyzer.limits import AnalyzerLimits
from dsstar_cli.analyzer.retriever import files_prompt, select_files
from dsstar_cli.events import Recorder
from dsstar_cli.roles.context import build_context

LIMITS = AnalyzerLimits()
STATES = {"AL": "Alabama", "AK": "Alaska", "AZ": "Arizona", **{f"S{i:02d}": f"State {i}" for i in range(54)}}


def listed_lines(data: Path, question: str) -> dict[str, str]:
    """Each listed file's line in the prompt, by path: one file is described, the others listed."""
    files = analyze_folder(data, LIMITS, Recorder(), "builtin")
    selection = select_files(files, question, 1, 1_000_000)
    prompt = files_prompt(selection)
    lines = prompt.split("## Other files in the folder", 1)[1].splitlines()[1:]
    return dict(line[2:].split(": ", 1) for line in lines if line.startswith("- "))  # Inside the quote markers.


def test_a_listed_file_says_what_it_holds_whatever_its_format(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "weather_readings.csv").write_text("city,temperature\nOslo,3\n")  # The one the question asks for.
    (data / "state_codes.json").write_text(json.dumps(STATES))
    (data / "customers.json").write_text(json.dumps([{"id": i, "name": f"c{i}", "tier": "gold"} for i in range(1000)]))
    (data / "fraud.csv").write_text("Fraud Reports by State,,\n,,\nState,Reports,Rank\n"
                                    + "".join(f"S{i},{i * 10},{i}\n" for i in range(1, 41)))
    with pd.ExcelWriter(data / "book.xlsx") as writer:
        pd.DataFrame({"merchant": ["a", "b"], "fee": [1, 2]}).to_excel(writer, sheet_name="merchants", index=False)
        pd.DataFrame({"currency": ["USD"], "rate": [1.1]}).to_excel(writer, sheet_name="fx_rates", index=False)
    with sqlite3.connect(data / "shop.sqlite") as db:
        db.execute("CREATE TABLE orders (id INTEGER, amount REAL)")
        db.executemany("INSERT INTO orders VALUES (?, ?)", [(i, i * 1.5) for i in range(7)])
        db.execute("CREATE TABLE refunds (order_id INTEGER)")
    db.close()
    (data / "codes.json.gz").write_bytes(gzip.compress(json.dumps(STATES).encode()))
    (data / "etl.py").write_text("def load_fees(path):\n    return path\n")
    (data / "readings.dat").write_text("station value\nA 1.5\n")

    lines = listed_lines(data, "What is the temperature in Oslo?")
    assert set(lines) == {"state_codes.json", "customers.json", "fraud.csv", "book.xlsx", "shop.sqlite", "codes.json.gz",
                          "etl.py", "readings.dat"}
    assert lines["state_codes.json"] == 'JSON object of 57 entries, string -> string, e.g. "AL": "Alabama"'
    assert lines["customers.json"] == "JSON array of 1,000 objects with 3 keys: id, name, tier"
    assert lines["fraud.csv"] == "'Fraud Reports by State'; 40 rows; columns State, Reports, Rank"
    assert lines["book.xlsx"].startswith("Excel workbook with 2 sheet(s): 'merchants' (3 rows x 2 columns), 'fx_rates'")
    assert lines["shop.sqlite"] == "SQLite database with 2 table(s)/view(s): orders (7 rows), refunds (0 rows)"
    assert lines["codes.json.gz"].startswith('gzip-compressed json file (codes.json): JSON object of 57 entries')
    assert lines["etl.py"] == "Python source code, 2 lines, 37 bytes (not run by the analyzer); defines load_fees"
    assert lines["readings.dat"].endswith(", 2 lines, 20 bytes: station value")


def test_a_document_is_summed_up_by_its_kind_and_title(tmp_path):
    (tmp_path / "manual.md").write_text("Intro paragraph.\n\n# Merchant fee manual\n\nFees are charged per payment.\n")
    (tmp_path / "notes.txt").write_text("\n\nRefunds are booked on the day they are approved.\nMore.\n")
    files = {f.path: f for f in analyze_folder(tmp_path, LIMITS, Recorder(), "builtin")}
    assert gist(files["manual.md"].format, files["manual.md"].description) == (
        "Text document, 5 lines, 71 bytes: Merchant fee manual")
    assert gist(files["notes.txt"].format, files["notes.txt"].description).endswith(
        ": Refunds are booked on the day they are approved.")


SCRIPT = '''"""Computes monthly fees."""
from pathlib import Path

Path(__file__).with_name("RAN").write_text("the analyzer ran me")


def monthly_fee(volume):
    return 0.02 * volume


class Ledger:
    pass
'''


def test_code_and_plain_text_are_described_without_a_model_call_and_never_run(tmp_path, config):
    from dsstar_cli.agent import Agent
    from dsstar_cli.analyzer.llm_describer import LLMDescriber
    from dsstar_cli.model import Models, ScriptedModel
    from dsstar_cli.sandbox import Executor

    data = tmp_path / "data"
    (data / "scripts").mkdir(parents=True)
    (data / "scripts" / "fees.py").write_text(SCRIPT)
    (data / "scripts" / "clean.R").write_text("clean <- function(df) {\n  df[!is.na(df$x), ]\n}\n")
    (data / "readings.dat").write_text("station value\nA 1.5\nB 2.5\n")
    (data / "big.sql").write_text("".join(f"CREATE TABLE t{i} (id INTEGER, note TEXT);\n-- {'x' * 80}\n"
                                          for i in range(400)))
    model = ScriptedModel({"analyzer": ["```python\nprint('described by the model')\n```"]})
    agent = Agent(Models(model), Executor(tmp_path / "work", data, timeout_s=30), Recorder(), None, 2)
    files = {f.path: f for f in analyze_folder(data, LIMITS, Recorder(), "auto", LLMDescriber(agent, 3000))}

    assert model.calls == []
    assert not (data / "scripts" / "RAN").exists()
    fees = files["scripts/fees.py"]
    assert (fees.method, fees.format) == ("builtin", "code")
    assert fees.description.startswith("Python source code, 12 lines")
    assert "defines monthly_fee, Ledger" in fees.description and SCRIPT.strip() in fees.description
    assert "R source code" in files["scripts/clean.R"].description and "defines clean" in files["scripts/clean.R"].description
    assert "A 1.5\nB 2.5" in files["readings.dat"].description and files["readings.dat"].method == "builtin"
    big = files["big.sql"].description  # Too long to show whole: its definitions, then its first lines.
    assert "SQL source code" in big and "Too long to show whole" in big and "line 3: CREATE TABLE t1" in big
    assert "CREATE TABLE t0 (id INTEGER, note TEXT);" in big and len(big) <= LIMITS.max_description_chars


def test_data_files_a_document_names_but_the_folder_lacks_are_said_once(tmp_path):
    data = tmp_path / "data"
    (data / "exports" / "sales.parquet").mkdir(parents=True)  # A folder, as Spark writes one.
    (data / "exports" / "sales.parquet" / "part-0.parquet").write_bytes(b"PAR1")
    (data / "exports" / "Merchants.CSV").write_text("merchant\na\n")
    (data / "archive.csv.gz").write_bytes(gzip.compress(b"a\n1\n"))
    (data / "readme.md").write_text(
        "# Data\n\n`payments.csv` holds one row per payment; see merchants.csv, sales.parquet and\n"
        "archive.csv. Yearly files are named `sales_*.csv`; the source is https://example.org/raw/dump.csv.\n"
        "Refunds live in data/refunds.json (not delivered).\n")
    files = analyze_folder(data, LIMITS, Recorder(), "builtin")
    context = build_context("How many payments?", None, str(data), select_files(files, "payments", 100, 1_000_000),
                            40_000)
    line = "Named in readme.md but not in the folder: payments.csv, refunds.json"
    assert context.full.count(line) == 1 and context.full.rstrip().endswith(line)
    assert "Named in" not in context.brief
