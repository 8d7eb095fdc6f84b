"""The run folder: every prompt, reply, script, output and event of one run, secrets redacted.

Layout:  <run_dir>/<id>/events.jsonl      one event per line, flushed as it happens
                        calls/0001-planner.json   messages sent and reply received
                        work/              the scripts' working directory: scripts, outputs, artifacts
                        result.json        the final result (the `--json` object)
"""

from __future__ import annotations

import errno
import json
import os
import secrets as _random
import time
from pathlib import Path

from dsstar_cli.errors import SetupError
from dsstar_cli.events import Event
from dsstar_cli.model import Messages, Reply
from dsstar_cli.secrets import redact, secret_values


class RunFolderError(SetupError):
    """The run folder cannot be created or written (permissions, a full disk)."""


def choose_run_root(configured: Path, data_dir: Path, fallback: Path) -> Path:
    """The configured root, unless it lies inside the data folder (which must never change)."""
    root = configured.resolve()
    data = data_dir.resolve()
    return fallback if root == data or data in root.parents else root


class RunFolder:
    def __init__(self, path: Path, resume: bool = False):
        """A new run folder, or (`resume`) an existing one whose calls and events are appended to."""
        self.path = path
        self.work = path / "work"
        self._secrets = secret_values()
        self._calls = len(list((path / "calls").glob("*.json"))) if resume else 0
        try:
            (path / "calls").mkdir(parents=True, exist_ok=resume)
            self.work.mkdir(exist_ok=resume)
            self._journal = (path / "events.jsonl").open("a", encoding="utf-8")
        except OSError as exc:
            verb = "reopen" if resume else "create"
            raise RunFolderError(f"cannot {verb} the run folder {path}: {exc.strerror or exc}") from exc

    @classmethod
    def create(cls, root: Path) -> "RunFolder":
        run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + _random.token_hex(3)
        return cls(root / run_id)

    def _clean(self, text: str) -> str:
        return redact(text, self._secrets)

    def __call__(self, event: Event) -> None:
        """Journal sink: append and flush, so a crash loses at most the event in flight."""
        try:
            self._journal.write(self._clean(json.dumps(event.as_dict(), ensure_ascii=False, default=str)) + "\n")
            self._journal.flush()
        except OSError as exc:
            raise self._write_error(exc) from exc

    def write(self, relative: str, text: str) -> Path:
        target = self.path / relative
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_text(self._clean(text), encoding="utf-8")
            os.replace(tmp, target)  # Whole or absent: a crash never leaves half a file behind.
        except OSError as exc:
            raise self._write_error(exc) from exc
        return target

    def _write_error(self, exc: OSError) -> RunFolderError:
        hint = " (free some disk space, or point run_dir elsewhere)" if exc.errno in (errno.ENOSPC, errno.EFBIG) \
            else " (check run_dir in the config)"
        return RunFolderError(f"cannot write the run folder {self.path}: {exc.strerror or exc}{hint}")

    def save_call(self, role: str, messages: Messages, reply: Reply, seconds: float) -> None:
        self._calls += 1
        record = {"role": role, "model": reply.model, "seconds": round(seconds, 3), "messages": messages,
                  "reply": reply.text, "usage": {"input_tokens": reply.input_tokens,
                                                 "output_tokens": reply.output_tokens, "cost_usd": reply.cost_usd}}
        self.write(f"calls/{self._calls:04d}-{role}.json", json.dumps(record, indent=1, ensure_ascii=False))

    def close(self) -> None:
        if not self._journal.closed:
            self._journal.close()

    def artifacts(self) -> list[str]:
        """Files the scripts wrote into the work folder (not our own scripts and outputs)."""
        ours = (".py", ".stdout.txt", ".stderr.txt")
        return sorted(str(p.relative_to(self.path)) for p in self.work.rglob("*")
                      if p.is_file() and not p.name.endswith(ours) and os.access(p, os.R_OK))
