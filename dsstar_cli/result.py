"""The result of a run: the JSON contract scripts and CI rely on, and the exit codes.

Fields may be added; renaming or removing one needs a new SCHEMA_VERSION.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import IntEnum
from typing import Any

from dsstar_cli import __version__

SCHEMA_VERSION = 1


class ExitCode(IntEnum):
    VERIFIED = 0           # a verified answer
    FAILED = 1             # the run ended without an answer (the reason says why)
    USAGE = 2              # bad command-line arguments
    UNVERIFIED = 3         # an answer, but the round cap was reached before the verifier agreed
    SETUP = 4              # configuration, model name or credentials to fix
    MODEL_UNREACHABLE = 5  # the model could not be reached, or kept failing
    DATA_FOLDER = 6        # the data folder is missing, empty or unreadable
    INTERRUPTED = 130      # Ctrl-C


EXIT_CODE_HELP = """Exit codes: 0 verified answer; 3 unverified answer (round cap reached);
1 run failed (no answer); 2 usage error; 4 configuration, model or credentials error;
5 model unreachable; 6 bad data folder; 130 interrupted."""

_OUTCOME_CODES = {"verified": ExitCode.VERIFIED, "unverified": ExitCode.UNVERIFIED}
_ERROR_KIND_CODES = {"model_config": ExitCode.SETUP, "model_unreachable": ExitCode.MODEL_UNREACHABLE}


@dataclass
class RunResult:
    question: str
    answer: str | None
    outcome: str                       # verified | unverified | failed | interrupted
    verified: bool
    reason: str
    rounds: int
    max_rounds: int
    plan: list[str]
    history: list[dict]
    final_code: str
    final_output: str
    files: list[dict]                  # path, format, method, error for every analysed file
    usage: dict[str, Any]              # per role and "total": calls, input/output tokens, cost_usd
    elapsed_s: dict[str, float]        # analysis, loop, total
    models: dict[str, str]
    run_dir: str | None
    data_dir: str
    guidelines: str | None = None
    artifacts: list[str] = field(default_factory=list)
    sandbox: dict[str, Any] = field(default_factory=lambda: {"level": "basic"})
    error_kind: str | None = None
    schema_version: int = SCHEMA_VERSION
    dsstar_version: str = __version__

    def exit_code(self) -> ExitCode:
        if self.outcome == "interrupted":
            return ExitCode.INTERRUPTED
        if self.outcome in _OUTCOME_CODES:
            return _OUTCOME_CODES[self.outcome]
        return _ERROR_KIND_CODES.get(self.error_kind or "", ExitCode.FAILED)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "exit_code": int(self.exit_code())}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), ensure_ascii=False, indent=2, default=str)


def error_json(kind: str, message: str, exit_code: int) -> str:
    """The one JSON object `--json` prints when a run could not even start."""
    return json.dumps({"schema_version": SCHEMA_VERSION, "dsstar_version": __version__, "outcome": "error",
                       "verified": False, "answer": None, "error": {"kind": kind, "message": message},
                       "exit_code": exit_code}, ensure_ascii=False, indent=2)
