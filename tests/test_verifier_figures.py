"""The verifier sees the chart: the figures a script saved and named (`FIGURE: path`) reach the
verifier's request as images when litellm says the model accepts them, and not otherwise. Through
the CLI against the fake OpenAI server, which records every request as it arrived."""

from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path

import pytest
from PIL import Image

from chart_agent import CHART_QUESTION, FIGURE, respond
from conftest import SAMPLE_DATA
from fake_openai import FakeOpenAIServer, role_of
from test_cli import dsstar

from dsstar_cli.roles import verifier


def verifier_requests(model: str, cwd: Path) -> tuple[list[dict], dict]:
    with FakeOpenAIServer(respond) as server:
        proc = dsstar("ask", str(SAMPLE_DATA), CHART_QUESTION, "--json", "--model", model, "--api-base",
                      server.base_url, cwd=cwd)
        requests = [r for r in server.requests if role_of(r["messages"]) == "verifier"]
    assert proc.returncode == 0, proc.stderr
    return requests, json.loads(proc.stdout)


def test_a_model_that_accepts_images_gets_the_chart_with_the_verdict_request(tmp_path):
    requests, result = verifier_requests("openai/gpt-4o", tmp_path)
    content = requests[0]["messages"][-1]["content"]
    assert isinstance(content, list) and content[0]["type"] == "text" and FIGURE in content[0]["text"]
    images = [part["image_url"]["url"] for part in content if part["type"] == "image_url"]
    assert len(images) == 1 and images[0].startswith("data:image/png;base64,")
    with Image.open(io.BytesIO(base64.b64decode(images[0].split(",", 1)[1]))) as image:
        assert image.format == "PNG" and image.width > 100
    kept = [path.read_text() for path in (Path(result["run_dir"]) / "calls").glob("*-verifier.json")]
    assert kept and not [text for text in kept if "base64," in text]  # The run folder keeps a mention only.


def test_a_text_only_model_gets_no_image(tmp_path):
    requests, _ = verifier_requests("openai/gpt-3.5-turbo", tmp_path)
    assert requests and isinstance(requests[0]["messages"][-1]["content"], str)
    assert "image_url" not in json.dumps(requests) and "base64," not in json.dumps(requests)
    assert not [m for m in requests[0]["messages"] if "images" in m]


def test_only_figures_inside_the_work_folder_are_sent(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "figures").mkdir(parents=True)
    outside.mkdir()
    Image.new("RGB", (200, 120), "red").save(work / "figures" / "ok.png")
    Image.new("RGB", (200, 120), "blue").save(outside / "private.png")
    os.symlink(outside / "private.png", work / "figures" / "link.png")
    os.symlink(outside, work / "away")
    output = "\n".join(f"FIGURE: {name}" for name in ("figures/ok.png", str(outside / "private.png"),
                                                      "../outside/private.png", "figures/link.png",
                                                      "away/private.png", "figures/missing.png"))
    assert [name for name, _ in verifier.figures_in(output, str(work))] == ["figures/ok.png"]
