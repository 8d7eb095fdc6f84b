"""DS-STAR's own analyzer for formats we have no profiler for: the model writes a script that
loads the file and prints its description; the script runs in the executor and the debugger
repairs it when it fails. The printed output is the description."""

from __future__ import annotations

import threading
from pathlib import Path

from dsstar_cli.agent import Agent
from dsstar_cli.analyzer.limits import ProfileError
from dsstar_cli.quoting import RULE, quote
from dsstar_cli.roles import render
from dsstar_cli.roles.context import RunContext

ROLE = "analyzer"


class LLMDescriber:
    """Callable as the analyzer's `describe_unknown`. One file at a time: the agent is not shared-safe."""

    def __init__(self, agent: Agent, max_chars: int):
        self.agent = agent
        self.max_chars = max_chars
        self._lock = threading.Lock()

    def __call__(self, path: Path, name: str) -> str:
        messages = describe_messages(path, name)
        with self._lock:
            # The debugger sees the file being described as its context.
            context = f'{RULE}\n\nDATA_DIR = "{path.parent}"\n\n# Data files\n## {name}\n(being described)'
            attempt = self.agent.write_and_run(ROLE, messages, "describe", RunContext(context, context, str(path.parent)))
        if not attempt.ok:
            raise ProfileError("the model's description script failed: " + attempt.output(300))
        return attempt.execution.stdout.strip()[: self.max_chars] or "(the description script printed nothing)"


def describe_messages(path: Path, name: str) -> list[dict[str, str]]:
    """The analyzer's request for one file: its name, size and first bytes (`dsstar ask --dry-run` shows it)."""
    with path.open("rb") as handle:
        head = handle.read(32)
    return render(ROLE, "describe", "", path=str(path), name=name, size=str(path.stat().st_size),
                  head=quote(repr(head), f"first bytes of {name}"), quoting_rule=RULE)
