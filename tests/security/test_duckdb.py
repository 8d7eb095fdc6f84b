"""DuckDB in every tier, on both paths: importable, configured for the sandbox whichever way the
script opens it (the module's default connection or `duckdb.connect()`), spilling inside the work
folder under the memory cap, and never fetching an extension. The `outside` canaries (a fake home
among them) prove it wrote nowhere else."""

from __future__ import annotations

import json

import pytest

REPORT = """
import json, os
import pandas as pd
import duckdb

def settings(connection):
    names = ("memory_limit", "threads", "temp_directory", "home_directory", "extension_directory",
             "autoload_known_extensions", "autoinstall_known_extensions", "enable_progress_bar")
    return dict(connection.sql("SELECT name, value FROM duckdb_settings() WHERE name IN "
                               + str(names)).fetchall())

sales = duckdb.sql("SELECT region, SUM(units) AS units FROM read_csv('DATA/sales.csv') GROUP BY 1 ORDER BY 1").df()
opened = duckdb.connect()
spilled = opened.sql("SELECT COUNT(*) FROM (SELECT range % 2000000 AS k, COUNT(*) AS n FROM range(4000000) "
                     "GROUP BY k ORDER BY n DESC, k)").fetchone()[0]
try:
    duckdb.connect().sql("SELECT * FROM read_csv('https://example.invalid/x.csv')").fetchall()
    remote = "read"
except duckdb.Error as exc:
    remote = str(exc)
print(json.dumps({"sales": sales.to_dict("list"), "default": settings(duckdb), "opened": settings(opened),
                  "mine": settings(duckdb.connect(config={"threads": 1})), "spilled": spilled, "remote": remote,
                  "cwd": os.getcwd()}))
"""


@pytest.mark.executor(timeout_s=60)
def test_duckdb_runs_configured_for_the_sandbox(box):
    result = box.run(REPORT.replace("DATA", str(box.data)))
    assert result.ok, result.stderr[-2000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["sales"] == {"region": ["north", "south"], "units": [10, 20]}
    assert found["spilled"] == 2_000_000
    work = str(box.work)
    for connection in ("default", "opened", "mine"):
        setting = found[connection]
        assert setting["memory_limit"] != "" and float(setting["memory_limit"].split()[0]) <= 192, setting  # MiB, for a 1 GB cap
        assert setting["temp_directory"].startswith(work + "/"), setting
        assert setting["home_directory"].startswith(work + "/"), setting
        assert setting["extension_directory"].startswith(work + "/"), setting
        assert setting["autoload_known_extensions"] == "false" == setting["autoinstall_known_extensions"]
        assert setting["enable_progress_bar"] == "false"
    assert found["mine"]["threads"] == "1", "a script's own config must win over the defaults"
    assert "httpfs" in found["remote"] and "autoload" in found["remote"].lower(), found["remote"]
