"""Hostile data folders against the analyzer (issue 14): a FIFO behind a link, an Excel zip bomb and
a file that is one huge line end in bounded time with one clear note, and dsstar's own process stays
small: built-in profiling runs in bounded child processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from conftest import tree_bytes
from test_cli import cli_env

PEAK_MB = 1024  # dsstar's own peak resident memory, whatever the folder holds


def describe_watched(folder: Path, tmp_path: Path, config: str, timeout: float = 120) -> tuple[str, float, float]:
    """(stdout, seconds, dsstar's own peak RSS in MB) of `dsstar describe FOLDER`."""
    (tmp_path / "bounds.yaml").write_text(config)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "dsstar_cli", "describe", str(folder), "-c",
                             str(tmp_path / "bounds.yaml")], cwd=tmp_path, env=cli_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    peak = 0.0
    while proc.poll() is None and time.monotonic() - started < timeout:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
            peak = max(peak, int(status.split("VmHWM:")[1].split()[0]) / 1024)
        except (OSError, IndexError, ValueError):
            pass
        time.sleep(0.05)
    out, err = proc.communicate(timeout=5) if proc.poll() is not None else (proc.kill(), ("", "killed"))[1]
    assert proc.returncode == 0, err
    return out, time.monotonic() - started, peak


def test_a_fifo_behind_a_link_is_never_opened(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    os.mkfifo(data / ".hidden_fifo")
    (data / "data.csv").symlink_to(".hidden_fifo")
    (data / "ok.csv").write_text("a,b\n1,2\n")
    before = sorted(os.listdir(data))
    out, seconds, _ = describe_watched(data, tmp_path, "analyzer:\n  cache: true\n", timeout=30)
    assert seconds < 20 and "## data.csv" in out and "Not a regular file" in out and "## ok.csv" in out
    assert sorted(os.listdir(data)) == before


def zip_bomb(path: Path, megabytes: int) -> None:
    """An .xlsx whose one sheet inflates to `megabytes` MB of XML from a few hundred KB."""
    row = "".join(f'<row r="{i}"><c r="A{i}" t="inlineStr"><is><t>{"x" * 40}</t></is></c></row>'
                  for i in range(1, 1001)).encode()
    parts = {
        "[Content_Types].xml": '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>',
        "_rels/.rels": '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        'officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>'
        '<sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
        'relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>',
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, text in parts.items():
            archive.writestr(name, text)
        with archive.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as sheet:
            sheet.write(b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>')
            for _ in range(megabytes * 1024 * 1024 // len(row)):
                sheet.write(row)
            sheet.write(b"</sheetData></worksheet>")


def test_an_excel_zip_bomb_costs_a_bounded_child_not_dsstar(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    zip_bomb(data / "bomb.xlsx", 60)
    (data / "ok.csv").write_text("a,b\n1,2\n")
    before = tree_bytes(data)
    out, seconds, peak = describe_watched(data, tmp_path, "analyzer:\n  file_timeout_s: 4\n  max_memory_mb: 512\n")
    assert "## bomb.xlsx" in out and "Not profiled: profiling" in out and "bound" in out, out
    assert "## ok.csv" in out and "2 columns" in out  # The rest of the folder is described as usual.
    assert "As far as it was read" not in out  # A container is not opened again in dsstar's process.
    assert seconds < 60 and peak < PEAK_MB, (seconds, peak)
    assert tree_bytes(data) == before


def test_a_file_that_is_one_huge_line_costs_a_bounded_child_not_dsstar(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    with (data / "oneline.csv").open("wb") as handle:
        handle.write(b"a,b\n")
        for _ in range(150):
            handle.write(b"1," * (1 << 19))  # 150 MB, no newline
    out, seconds, peak = describe_watched(data, tmp_path, "analyzer:\n  file_timeout_s: 20\n  max_memory_mb: 256\n")
    assert "## oneline.csv" in out and "Not profiled: profiling" in out and "bound" in out, out
    # Described as far as it was read: the header, and the start of the endless line, cut.
    assert "As far as it was read (the first 2 line(s) of the 65,536 bytes read)" in out, out
    assert "a,b\n1,1,1," in out and "[... line cut ...]" in out and len(out) < 5000
    assert seconds < 60 and peak < PEAK_MB, (seconds, peak)


def test_the_run_time_budget_bounds_analysis(tmp_path):
    from dsstar_cli.analyzer import analyze_folder
    from dsstar_cli.analyzer.limits import AnalyzerLimits

    data = tmp_path / "data"
    data.mkdir()
    zip_bomb(data / "bomb.xlsx", 60)
    (data / "ok.csv").write_text("a,b\n1,2\n")
    started = time.monotonic()
    files = analyze_folder(data, AnalyzerLimits(seconds_per_file=60), lambda event: None, "builtin", workers=1,
                           deadline=started + 3)
    took = time.monotonic() - started
    notes = {f.path: f.error for f in files}
    assert took < 15 and "time budget" in (notes["bomb.xlsx"] or ""), (took, notes)


def test_many_files_of_one_layout_are_profiled_once_and_described_by_reference(tmp_path):
    from dsstar_cli.analyzer import analyze_folder
    from dsstar_cli.analyzer.limits import AnalyzerLimits
    from dsstar_cli.analyzer.siblings import MANY_FILES

    data = tmp_path / "data"
    data.mkdir()
    for i in range(MANY_FILES + 1):  # One folder per store (in one folder they would be one dataset).
        (data / f"store_{i:05d}").mkdir()
        (data / f"store_{i:05d}" / "sales.csv").write_text("day,store,sales\n" + "2025-01-01,1,3\n" * (1 + i % 3))
    (data / "other.csv").write_text("a;b\n1;2\n")
    outside = tmp_path / "secret.csv"
    outside.write_text("day,store,sales\nCANARY-OUTSIDE,1,1\n")
    (data / "zz_link.csv").symlink_to(outside)
    files = {f.path: f for f in analyze_folder(data, AnalyzerLimits(), lambda event: None, "builtin")}
    assert "3 columns" in files["store_00000/sales.csv"].description            # profiled in full
    sibling = files["store_00002/sales.csv"].description
    assert sibling.startswith("Same layout as store_00000/sales.csv") and "day,store,sales" in sibling
    assert "3 line(s) after it" in sibling
    assert "2 columns" in files["other.csv"].description                   # its own layout: profiled
    assert files["zz_link.csv"].format == "link" and not any("CANARY" in f.description for f in files.values())


def test_past_list_only_files_are_listed_without_being_opened(tmp_path):
    from dsstar_cli.analyzer import analyze_folder
    from dsstar_cli.analyzer.limits import AnalyzerLimits
    from dsstar_cli.analyzer.siblings import LIST_ONLY

    data = tmp_path / "data"
    for i in range(LIST_ONLY + 1):  # Two folder patterns: day*/*.csv and notes/*.txt.
        folder = data / (f"day_{i // 1000:02d}" if i < LIST_ONLY else "notes")
        folder.mkdir(parents=True, exist_ok=True)
        name = f"store_{i % 1000:04d}.csv" if i < LIST_ONLY else "readme.txt"
        # A file that is opened shows its first line in its description (profiled or by reference).
        (folder / name).write_text("day,store,sales\n1,2,3\n" if i == 0 else f"OPENED-{i},x\n1,2\n")
    events = []
    files = {f.path: f for f in analyze_folder(data, AnalyzerLimits(), events.append, "builtin")}
    assert len(files) == LIST_ONLY + 1
    assert "3 columns" in files["day_00/store_0000.csv"].description        # the pattern's example
    assert "OPENED" in files["notes/readme.txt"].description                # its own pattern: profiled
    listed = files["day_07/store_0123.csv"]
    assert listed.description.startswith("Listed, not read: one of 10,000 files matching day_*/*.csv")
    assert listed.size_bytes == len("OPENED-7123,x\n1,2\n")
    opened = [f.path for f in files.values() if "OPENED" in f.description]
    assert opened == ["notes/readme.txt"], opened[:5]
    assert events[-1].kind == "analysis_done"


def test_a_few_files_are_each_profiled_in_full(tmp_path):
    from dsstar_cli.analyzer import analyze_folder
    from dsstar_cli.analyzer.limits import AnalyzerLimits

    data = tmp_path / "data"
    data.mkdir()
    for i in range(3):
        (data / f"store_{i}.csv").write_text("day,store,sales\n2025-01-01,1,3\n")
    files = analyze_folder(data, AnalyzerLimits(), lambda event: None, "builtin")
    assert all("3 columns" in f.description for f in files)


def test_a_fifo_a_script_plants_in_its_work_folder_blocks_nothing(tmp_path):
    from dsstar_cli.runlog import RunFolder
    from dsstar_cli.sandbox import Executor

    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text("a\n1\n")
    run = RunFolder(tmp_path / "run")
    executor = Executor(run.work, data, timeout_s=10, tier="basic")  # The confined tiers refuse mkfifo.
    try:
        started = time.monotonic()
        result = executor.run("import os\nos.mkfifo('pipe.csv')\nos.symlink('pipe.csv', 'plot.png')\n"
                              "open('table.csv', 'w').write('x\\n1\\n')\nprint('planted')", "fifo")
        artifacts = run.artifacts()
    finally:
        executor.close()
        run.close()
    assert result.ok and "planted" in result.stdout, result.stderr
    assert artifacts == ["work/table.csv"] and time.monotonic() - started < 10
