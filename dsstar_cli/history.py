"""Run history: every run folder of the user, listed, found by id and read back.

Run folders are named `<YYYYmmdd-HHMMSS>-<hex>` and live under the run roots (see
`runlog.run_root_candidates`: the configured run_dir, the user data dir, the private temp dir).
A run is read from its own files only: `result.json` when it finished, else the first event of
`events.jsonl` and the checkpoint, so a run killed with `kill -9` is listed too.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from dsstar_cli.errors import UsageError
from dsstar_cli.events import Event
from dsstar_cli.runlog import run_root_candidates

RUN_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")


@dataclass
class RunSummary:
    id: str
    run_dir: str
    started: str | None      # ISO 8601, local time
    data_dir: str | None
    question: str | None
    outcome: str             # the result's outcome, or "unfinished" (no result.json: killed, or still running)
    rounds: int
    cost_usd: float | None
    calls: int
    answer: str | None

    def as_dict(self) -> dict:
        return asdict(self)


def run_roots(configured: str | None) -> list[Path]:
    """Every folder that may hold run folders, without duplicates (nothing is created)."""
    roots: list[Path] = []
    for root in run_root_candidates(configured):
        resolved = root.resolve()
        if resolved not in roots:
            roots.append(resolved)
    return roots


def run_folders(configured: str | None) -> list[Path]:
    """Every run folder under the run roots, newest first."""
    found = [path for root in run_roots(configured) if root.is_dir()
             for path in root.iterdir() if RUN_ID.fullmatch(path.name) and path.is_dir()]
    return sorted(found, key=lambda path: path.name, reverse=True)


def _json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def first_event(run_dir: Path) -> dict | None:
    try:
        with open(run_dir / "events.jsonl", encoding="utf-8") as journal:
            return json.loads(journal.readline())
    except (OSError, ValueError):
        return None


def summarize(run_dir: Path) -> RunSummary:
    result = _json(run_dir / "result.json")
    started = first_event(run_dir) or {}
    state = _json(run_dir / "state.json") or {}
    when = datetime.fromtimestamp(started["time"]).isoformat(timespec="seconds") if "time" in started else None
    if result is not None:
        total = result.get("usage", {}).get("total", {})
        return RunSummary(run_dir.name, str(run_dir), when, result.get("data_dir"), result.get("question"),
                          result.get("outcome", "?"), result.get("rounds", 0), total.get("cost_usd"),
                          total.get("calls", 0), result.get("answer"))
    usage = state.get("usage", {})
    costs = [u.get("cost_usd") for u in usage.values()]
    return RunSummary(run_dir.name, str(run_dir), when, started.get("data_dir") or state.get("data_dir"),
                      started.get("question") or state.get("question"), "unfinished",
                      (state.get("loop") or {}).get("rounds", 0),
                      None if None in costs else round(sum(costs), 6), sum(u.get("calls", 0) for u in usage.values()),
                      None)


def list_runs(configured: str | None, limit: int | None = None) -> list[RunSummary]:
    folders = run_folders(configured)
    return [summarize(path) for path in (folders[:limit] if limit else folders)]


def is_run_folder(path: Path) -> bool:
    """A folder dsstar made for a run: it has the journal every run writes first."""
    return path.is_dir() and (path / "events.jsonl").is_file()


def find_run(ref: str, configured: str | None) -> Path:
    """The run folder `ref` names: a path (relative to the current directory or absolute), a run id,
    or an id's unique prefix. UsageError when there is none, or more than one."""
    path = Path(ref).expanduser()
    if path.exists():
        if not is_run_folder(path):
            raise UsageError(f"{ref} is not a run folder (it has no events.jsonl); `dsstar runs` lists the runs")
        return path.resolve()
    matches = [folder for folder in run_folders(configured) if folder.name.startswith(ref)] if ref else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UsageError(f"{ref} is not a run folder, nor the id of a run; `dsstar runs` lists the runs")
    raise UsageError(f"{ref!r} matches {len(matches)} runs ({', '.join(m.name for m in matches[:5])}): "
                     "give more of the id")


def events_of(run_dir: Path) -> list[Event]:
    """The run's journal as events (a last line cut short by a crash is skipped)."""
    events = []
    try:
        lines = (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read {run_dir / 'events.jsonl'}: {exc.strerror or exc}") from exc
    for line in lines:
        try:
            events.append(Event.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            continue
    return events


def result_of(run_dir: Path) -> dict | None:
    return _json(run_dir / "result.json")
