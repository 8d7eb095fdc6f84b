"""Links out of the data folder are listed but not followed unless the user opts in
(`follow_links`, `--follow-links`): nothing they lead to reaches a description."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsstar_cli.analyzer import OUTSIDE_LINK, analyze_folder
from dsstar_cli.analyzer.cache import DescriptionCache
from dsstar_cli.analyzer.discover import list_data_files
from dsstar_cli.analyzer.limits import AnalyzerLimits
from dsstar_cli.config import load_config
from dsstar_cli.events import Recorder
from test_cli import dsstar

CANARY = "CANARY_7f3a9e"
LIMITS = AnalyzerLimits()


@pytest.fixture
def data(tmp_path) -> Path:
    """A data folder with its own files, links that stay inside it, and links leading outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shadow.csv").write_text(f"user,{CANARY}\nroot,x\n")
    (outside / "blob.xyz").write_bytes(CANARY.encode())
    data = tmp_path / "data"
    (data / "real").mkdir(parents=True)
    (data / "real" / "sales.csv").write_text("region,amount\nnorth,10\nsouth,20\n")
    (data / "users.csv").symlink_to(outside / "shadow.csv")
    (data / "blob.xyz").symlink_to(outside / "blob.xyz")
    (data / "ext").symlink_to(outside)
    (data / "same.csv").symlink_to(data / "real" / "sales.csv")  # Stays inside: works as any file.
    (data / "alias").symlink_to(data / "real")
    return data


def test_discovery_lists_outside_links_without_entering_them(data):
    # real/ is walked once, through the first name found (alias/), as any folder reached twice.
    assert list_data_files(data) == [Path(p) for p in ("alias/sales.csv", "blob.xyz", "ext", "same.csv",
                                                         "users.csv")]
    followed = list_data_files(data, follow_links=True)
    assert Path("ext/shadow.csv") in followed and Path("ext") not in followed


def test_outside_links_are_described_as_such_and_never_read(data):
    unknown = []
    files = {f.path: f for f in analyze_folder(data, LIMITS, Recorder(), "auto",
                                               lambda path, name: unknown.append(name) or "described")}
    for name in ("users.csv", "blob.xyz", "ext"):
        assert (files[name].description, files[name].size_bytes, files[name].format) == (OUTSIDE_LINK, 0, "link")
        assert "not followed" in files[name].error
    assert unknown == []  # The model never got a script to write about the outside blob.
    assert CANARY not in json.dumps([f.as_dict() for f in files.values()])
    assert "north" in files["same.csv"].description and "north" in files["alias/sales.csv"].description
    assert files["same.csv"].error is None


def test_follow_links_reads_them(data):
    files = {f.path: f for f in analyze_folder(data, LIMITS, Recorder(), "builtin", follow_links=True)}
    assert CANARY in files["users.csv"].description and CANARY in files["ext/shadow.csv"].description


def test_a_description_cached_while_following_is_not_served_when_not(data, tmp_path):
    cache = DescriptionCache(tmp_path / "cache")
    followed = analyze_folder(data, LIMITS, Recorder(), "builtin", cache=cache, follow_links=True)
    assert CANARY in json.dumps([f.as_dict() for f in followed])
    again = analyze_folder(data, LIMITS, Recorder(), "builtin", cache=cache)
    assert CANARY not in json.dumps([f.as_dict() for f in again])
    assert any(f.cached for f in again)  # The cache still serves the files inside the folder.


def test_follow_links_is_a_config_key_and_a_flag(tmp_path):
    assert load_config(env={}, cwd=tmp_path)["follow_links"] is False
    (tmp_path / "dsstar.yaml").write_text("follow_links: true\n")
    assert load_config(env={}, cwd=tmp_path)["follow_links"] is True
    flagged = load_config(overrides={"follow_links": True}, env={}, cwd=tmp_path / "nowhere")
    assert flagged["follow_links"] is True and flagged.sources["follow_links"] == "flag --follow-links"


def test_describe_never_prints_what_an_outside_link_holds(data, tmp_path):
    plain = dsstar("describe", str(data), cwd=tmp_path)
    as_json = dsstar("describe", str(data), "--json", cwd=tmp_path)
    assert plain.returncode == 0 and as_json.returncode == 0, plain.stderr + as_json.stderr
    for proc in (plain, as_json):
        assert CANARY not in proc.stdout + proc.stderr
    assert "link leading outside the data folder" in plain.stdout
    followed = dsstar("describe", str(data), "--follow-links", cwd=tmp_path)
    assert followed.returncode == 0 and CANARY in followed.stdout
