"""Cases that were already held before issue 14, kept held: each ends in bounded time with its
documented exit code and one clear line, dsstar's memory bounded and the data folder unchanged.

Files: links to /dev/zero and /dev/urandom, 0-byte files, random bytes named as known formats, JSON
nested 200,000 deep. Model replies: 10 MB long, invalid UTF-8, no code where code was asked for.
And three runs at once on one folder sharing one description cache."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from conftest import tree_bytes
from fake_openai import FakeOpenAIServer
from sample_agent import QUESTION, respond
from test_cli import cli_env
from test_hostile_files import PEAK_MB, describe_watched
from test_model_deadlines import argv, clean, lines, run, the_result


def test_devices_empty_files_random_bytes_and_deep_json_are_described_in_bounded_time(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "zero.csv").symlink_to("/dev/zero")
    (data / "noise.csv").symlink_to("/dev/urandom")
    rng = random.Random(14)
    for suffix in (".csv", ".json", ".xlsx", ".parquet", ".sqlite", ".jsonl", ".md"):
        (data / f"empty{suffix}").write_bytes(b"")
        (data / f"random{suffix}").write_bytes(rng.randbytes(200_000))
    (data / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    (data / "ok.csv").write_text("a,b\n1,2\n")
    before = tree_bytes(data)
    out, seconds, peak = describe_watched(data, tmp_path, "follow_links: true\nanalyzer:\n  file_timeout_s: 20\n")
    described = {part.split(" (", 1)[0] for part in out.split("## ")[1:]}
    assert described == {path.name for path in data.iterdir()}, out  # Every file has its description.
    assert out.count("Not a regular file") == 2 and "2 columns" in out
    assert seconds < 90 and peak < PEAK_MB, (seconds, peak)
    assert tree_bytes(data) == before


def config(tmp_path: Path) -> None:
    (tmp_path / "dsstar.yaml").write_text("llm:\n  retries: 1\n  retry_max_delay_s: 1\n")


def test_a_10_mb_reply_ends_cleanly(tmp_path, sample_copy):
    """A planner that answers 10 MB: the run goes on with it bounded (prompts are capped), or ends
    with one clear line; it never hangs or eats memory."""
    before = tree_bytes(sample_copy)
    config(tmp_path)
    huge = lambda role, messages: ("Look at every file. " * 500_000) if role == "planner" else respond(role, messages)  # noqa: E731
    with FakeOpenAIServer(huge) as server:
        proc, took = run(tmp_path, sample_copy, server.base_url, "--max-rounds", "2", "--quiet", "--timeout", "120")
    result = the_result(tmp_path)
    assert proc.returncode in (0, 1, 3, 5, 8), proc.stderr
    assert took < 150 and len(lines(proc.stderr)) <= 1, proc.stderr
    clean(proc.stderr)
    assert tree_bytes(sample_copy) == before


def test_a_reply_of_invalid_utf8_and_a_coder_without_code_end_cleanly(tmp_path, sample_copy):
    before = tree_bytes(sample_copy)
    config(tmp_path)

    def bad(role, messages):
        if role == "coder":
            return "I would load the CSV with pandas and group by merchant."  # prose, no code block
        if role == "planner":
            return "Step: \udcff\udcfe load \ud800 the data"  # lone surrogates: not encodable as UTF-8
        return respond(role, messages)

    with FakeOpenAIServer(bad) as server:
        proc, took = run(tmp_path, sample_copy, server.base_url, "--max-rounds", "2", "--quiet")
    result = the_result(tmp_path)
    assert proc.returncode in (1, 3, 5), proc.stderr
    assert result["answer"] is None or result["outcome"] != "verified"
    assert lines(proc.stderr) == [f"dsstar: no answer: {result['reason']}"], proc.stderr
    clean(proc.stderr + result["reason"])
    assert took < 120
    assert tree_bytes(sample_copy) == before


def test_three_runs_at_once_on_one_folder_and_one_cache(tmp_path, sample_copy):
    before = tree_bytes(sample_copy)
    config(tmp_path)
    env = cli_env(tmp_path)
    with FakeOpenAIServer(respond) as server:
        procs = [subprocess.Popen(argv(sample_copy, server.base_url, "--json", "--no-progress"), cwd=tmp_path,
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  stdin=subprocess.DEVNULL) for _ in range(3)]
        outputs = [proc.communicate(timeout=240) for proc in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err
        result = json.loads(out)
        assert result["answer"] == "Golden Gate Gaming" and result["verified"]
    assert len({json.loads(out)["run_dir"] for out, _ in outputs}) == 3  # Three run folders, none shared.
    assert tree_bytes(sample_copy) == before
