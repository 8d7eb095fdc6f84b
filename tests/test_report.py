"""`dsstar runs report RUN`: a run as one self-contained HTML page, written through the CLI from a
scripted chart run (fake OpenAI server), and opened in a real headless Chromium (Debian's
package; the browser test skips, saying so, where it is not installed)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from chart_agent import CHART_QUESTION, FIGURE, STEP, respond
from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer
from test_cli import dsstar

QUESTION = CHART_QUESTION + " <script>alert('x')</script>"  # Text, never markup, on the page.
TAB_BLUE, TAB_ORANGE = (31, 119, 180), (255, 127, 14)      # matplotlib's first two bar colours
ANSWER_GREEN = (238, 246, 238)                               # the answer box's background (#eef6ee)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> tuple[Path, dict]:
    cwd = tmp_path_factory.mktemp("report")
    with FakeOpenAIServer(respond) as server:
        proc = dsstar("ask", str(SAMPLE_DATA), QUESTION, "--json", "--model", "openai/fake", "--api-base",
                      server.base_url, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    target = cwd / "shared" / "report.html"
    target.parent.mkdir()
    made = dsstar("runs", "report", Path(result["run_dir"]).name, "-o", str(target), cwd=cwd)
    assert made.returncode == 0, made.stderr
    assert made.stdout == f"{target}\n"
    return target, result


def test_the_report_holds_the_run_and_needs_nothing_from_outside(page):
    target, result = page
    text = target.read_text()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text and "<script" not in text
    assert result["answer"] in text and STEP in text and "counts.plot(kind=&quot;bar&quot;" in text
    assert "per currency:" in text                                # a script's output
    assert "<td>verifier</td>" in text and "<td>finalizer</td>" in text   # the model calls
    assert len(re.findall(r'<img src="data:image/png;base64,', text)) == 1 and f"work/{FIGURE}" in text
    assert not re.search(r'(src|href)="(?!data:)', text)         # no resource fetched from anywhere
    assert "default-src 'none'" in text


def test_runs_report_of_an_unknown_run_is_one_line_and_exit_2(tmp_path):
    proc = dsstar("runs", "report", "no-such-run", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and proc.stderr.startswith("dsstar: error:")


def test_chromium_renders_the_figure_and_the_answer(page, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no Chromium here (Debian: apt-get install chromium; .ci/run installs it)")
    target, result = page
    shot = tmp_path / "shot.png"
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}"]
    subprocess.run(base + ["--window-size=1000,1600", f"--screenshot={shot}", target.as_uri()], check=True,
                   capture_output=True, timeout=120)
    dom = subprocess.run(base + ["--dump-dom", target.as_uri()], check=True, capture_output=True, text=True,
                         timeout=120).stdout
    assert result["answer"] in dom and "naturalWidth" not in dom
    with Image.open(shot) as image:
        colours = {colour for _, colour in image.convert("RGB").getcolors(maxcolors=1 << 22)}
    assert ANSWER_GREEN in colours                                       # the answer box is drawn
    near = lambda want: any(sum(abs(a - b) for a, b in zip(c, want)) < 30 for c in colours)  # noqa: E731
    assert near(TAB_BLUE) and near(TAB_ORANGE)                           # the chart's bars are drawn


def test_ask_report_writes_the_page_beside_the_answer(tmp_path):
    target = tmp_path / "page.html"
    with FakeOpenAIServer(respond) as server:
        proc = dsstar("ask", str(SAMPLE_DATA), CHART_QUESTION, "--model", "openai/fake", "--api-base",
                      server.base_url, "--report", str(target), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"dsstar: report {target}\n" in proc.stderr and proc.stdout == f"the chart is in {FIGURE}\n"
    text = target.read_text()
    assert CHART_QUESTION in text and f"the chart is in {FIGURE}" in text and "data:image/png;base64," in text
