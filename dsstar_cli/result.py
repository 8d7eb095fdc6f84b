"""The result of a run: the JSON contract scripts and CI rely on, and the exit codes.

Fields may be added; renaming or removing one needs a new SCHEMA_VERSION.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
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
    COST_LIMIT = 7         # an unverified answer: --max-cost was reached first
    TIME_LIMIT = 8         # an unverified answer: --timeout was reached first
    AMBIGUOUS = 9          # --strict only: a verified answer, but another plausible reading gives another
    UNANSWERABLE = 10      # verified: the data folder does not hold what the question needs (no answer)
    INTERRUPTED = 130      # Ctrl-C (SIGINT)
    TERMINATED = 143       # SIGTERM


EXIT_CODE_HELP = """Exit codes: 0 verified answer; 9 with --strict: verified, but another plausible reading
gives a different answer (see "alternatives"); 10 the data cannot answer the question; 3 unverified answer
(round cap reached); 7 cost budget (--max-cost) reached; 8 time budget (--timeout) reached; 1 run failed
(no answer); 2 usage error; 4 configuration, model or credentials error; 5 model unreachable;
6 bad data folder; 130 interrupted (Ctrl-C); 143 terminated (SIGTERM)."""

_OUTCOME_CODES = {"verified": ExitCode.VERIFIED, "unverified": ExitCode.UNVERIFIED,
                  "cost_limit": ExitCode.COST_LIMIT, "time_limit": ExitCode.TIME_LIMIT,
                  "unanswerable": ExitCode.UNANSWERABLE}
_ERROR_KIND_CODES = {"model_config": ExitCode.SETUP, "model_unreachable": ExitCode.MODEL_UNREACHABLE}


def exit_code_for(outcome: str, error_kind: str | None, ambiguous: bool = False, strict: bool = False) -> ExitCode:
    """The exit code of one run, from how it ended. `strict` (opt-in): a verified answer that another
    plausible reading would change exits 9, not 0."""
    if outcome == "interrupted":
        return ExitCode.TERMINATED if error_kind == "SIGTERM" else ExitCode.INTERRUPTED
    if outcome == "verified" and ambiguous and strict:
        return ExitCode.AMBIGUOUS
    if outcome in _OUTCOME_CODES:
        return _OUTCOME_CODES[outcome]
    return _ERROR_KIND_CODES.get(error_kind or "", ExitCode.FAILED)


# Most serious first: what stopped the runs from outside, then the setup and the model, then the run.
SEVERITY = (ExitCode.INTERRUPTED, ExitCode.TERMINATED, ExitCode.MODEL_UNREACHABLE, ExitCode.SETUP,
            ExitCode.FAILED, ExitCode.TIME_LIMIT, ExitCode.COST_LIMIT, ExitCode.UNVERIFIED, ExitCode.UNANSWERABLE,
            ExitCode.AMBIGUOUS)
# What says a run did not run at all; a bench task that ran (to any answer, or none) is not an error.
NOT_RUN = {ExitCode.INTERRUPTED, ExitCode.TERMINATED, ExitCode.MODEL_UNREACHABLE, ExitCode.SETUP}


def overall_exit_code(codes: list[int], answers_count: bool = True) -> ExitCode:
    """The one exit-code policy for many runs (ask's batch mode, bench): the most serious code among
    them, 0 when there is none. `answers_count=False` (bench): only runs that did not run count."""
    present = set(codes)
    for code in SEVERITY:
        if code in present and (answers_count or code in NOT_RUN):
            return code
    return ExitCode.VERIFIED


@dataclass
class RunResult:
    question: str
    answer: str | None
    outcome: str                       # verified | unanswerable | unverified | cost_limit | time_limit | failed
                                       # | interrupted
    verified: bool
    reason: str
    rounds: int
    max_rounds: int
    plan: list[str]
    history: list[dict]
    final_code: str
    final_output: str
    files: list[dict]                  # path, format, method, error for every analysed file
    files_used: list[str]              # the data files the final plan's scripts read
    usage: dict[str, Any]              # per role and "total": calls, input/output tokens, cost_usd
    elapsed_s: dict[str, float]        # analysis, loop, total
    models: dict[str, str]
    run_dir: str | None
    data_dir: str
    guidelines: str | None = None
    artifacts: list[str] = field(default_factory=list)
    sandbox: dict[str, Any] = field(default_factory=lambda: {"level": "basic"})
    error_kind: str | None = None
    answer_from: str | None = None     # final_script | solution_output; None without an answer
    note: str | None = None            # what the answer refers to (year, unit, period): beside it, never in it
    assumptions: list[str] = field(default_factory=list)       # the choices the answer depends on
    alternatives: list[dict] = field(default_factory=list)     # {reading, answer}: printed, and different
    warnings: list[str] = field(default_factory=list)          # what the user should know (the basic tier by auto)
    schema_version: int = SCHEMA_VERSION
    dsstar_version: str = __version__

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> "RunResult":
        """A result read back from a run folder's result.json (older ones lack the newer fields)."""
        names = {f.name for f in fields(cls) if f.init}
        return cls(**{key: value for key, value in record.items() if key in names})

    @property
    def ambiguous(self) -> bool:
        """Another plausible reading gives a different answer (a script printed it)."""
        return self.answer is not None and bool(self.alternatives)

    def exit_code(self, strict: bool = False) -> ExitCode:
        return exit_code_for(self.outcome, self.error_kind, self.ambiguous, strict)

    def as_dict(self, strict: bool = False) -> dict[str, Any]:
        return {**asdict(self), "ambiguous": self.ambiguous, "exit_code": int(self.exit_code(strict))}

    def to_json(self, strict: bool = False) -> str:
        return json.dumps(self.as_dict(strict), ensure_ascii=False, indent=2, default=str)


def error_object(kind: str, message: str, exit_code: int, question: str | None = None) -> dict[str, Any]:
    """The one JSON object `--json` prints when a run could not even start (see ERROR_SCHEMA)."""
    return {"schema_version": SCHEMA_VERSION, "dsstar_version": __version__, "outcome": "error",
            "verified": False, "answer": None, "question": question, "error": {"kind": kind, "message": message},
            "exit_code": exit_code}


def error_json(kind: str, message: str, exit_code: int, question: str | None = None) -> str:
    return json.dumps(error_object(kind, message, exit_code, question), ensure_ascii=False, indent=2)


_USAGE = {"type": "object", "required": ["calls", "input_tokens", "output_tokens", "cost_usd"], "properties": {
    "calls": {"type": "integer"}, "input_tokens": {"type": "integer"}, "output_tokens": {"type": "integer"},
    "cached_input_tokens": {"type": "integer", "description": "of input_tokens, those served from the provider's "
                                                              "prompt cache (billed at its cached rate)"},
    "cost_usd": {"type": ["number", "null"], "description": "null when the model is not in litellm's price map"}}}
_STRING_LIST = {"type": "array", "items": {"type": "string"}}
# Every field of the result: (JSON Schema, description). The README documents the same fields.
RESULT_FIELDS: dict[str, tuple[dict, str]] = {
    "schema_version": ({"const": SCHEMA_VERSION}, "bumped when a field is renamed or removed"),
    "dsstar_version": ({"type": "string"}, "the dsstar release that produced the result"),
    "id": ({"type": "string"}, "batch mode only: the question's id"),
    "question": ({"type": "string"}, "the question asked"),
    "guidelines": ({"type": ["string", "null"]}, "the answer-format guidelines given, if any"),
    "answer": ({"type": ["string", "null"]}, "the final answer, exactly as printed: only what was asked (the "
                                              "number, the name, the list; several things in the order asked), "
                                              "in the answer format's form; null when there is none"),
    "note": ({"type": ["string", "null"]}, "what the answer refers to (the year or period found, the unit, the "
                                           "entity), kept out of answer so that it parses; null when none"),
    "assumptions": (_STRING_LIST, "the interpretive choices the answer depends on: what the question's terms were "
                                  "taken to mean, data conventions, filters, the denominator, which file"),
    "alternatives": ({"type": "array", "items": {"type": "object", "required": ["reading", "answer"],
                                                  "properties": {"reading": {"type": "string"},
                                                                 "answer": {"type": "string"}}}},
                     "other plausible readings whose answers differ from answer, each with the answer a script "
                     "printed for it (never guessed); empty when no other reading changes the answer"),
    "ambiguous": ({"type": "boolean"}, "true when there is an answer and alternatives is not empty: another "
                                       "plausible reading gives a different answer (exit code 9 with --strict "
                                       "when the answer is verified)"),
    "outcome": ({"enum": ["verified", "unanswerable", "unverified", "cost_limit", "time_limit", "failed",
                          "interrupted"]},
                "how the run ended: unanswerable = verified that the data folder does not hold what the question "
                "needs (answer null, reason says why); unverified = round cap reached; cost_limit / time_limit = "
                "that budget ran out (each still has a best-effort answer when a script ran)"),
    "verified": ({"type": "boolean"}, "true only for a verified answer (outcome verified)"),
    "reason": ({"type": "string"}, "why the run ended as it did"),
    "rounds": ({"type": "integer", "minimum": 0}, "rounds used"),
    "max_rounds": ({"type": "integer", "minimum": 1}, "the round cap"),
    "plan": (_STRING_LIST, "the final plan's steps, in order"),
    "history": ({"type": "array", "items": {"type": "object", "required": ["round", "action", "step", "dropped"],
                                             "properties": {"round": {"type": "integer"},
                                                            "action": {"enum": ["add", "fix"]},
                                                            "step": {"type": ["integer", "null"]},
                                                            "dropped": _STRING_LIST,
                                                            "fallback": {"type": "boolean"}}}},
                "every routing decision: add a step, or fix step k (dropping k and what follows)"),
    "answer_from": ({"enum": ["final_script", "solution_output", None]},
                    "how the answer was made: final_script = printed by the finalizer's script; solution_output "
                    "= copied by the finalizer from the output of the last script that ran, which already held "
                    "it (no script run); null when there is no answer"),
    "final_code": ({"type": "string"}, "the finalizer's script that printed the answer (empty when answer_from "
                                       "is solution_output)"),
    "final_output": ({"type": "string"}, "what that script printed (trimmed; empty when no script ran)"),
    "files": ({"type": "array", "items": {"type": "object", "required": ["path", "format", "method"]}},
              "every analysed file: path, format, size_bytes, method (builtin, llm, metadata), error"),
    "files_used": (_STRING_LIST, "the data files the final plan's scripts read"),
    "usage": ({"type": "object", "required": ["total"], "additionalProperties": _USAGE},
              "model calls, tokens and cost per role, and the total"),
    "elapsed_s": ({"type": "object", "required": ["analysis", "loop", "total"],
                   "additionalProperties": {"type": "number"}}, "seconds per phase"),
    "models": ({"type": "object", "required": ["default"], "additionalProperties": {"type": "string"}},
               "the model of every role (default, and any per-role override)"),
    "run_dir": ({"type": ["string", "null"]}, "the run folder with every prompt, reply, script and event"),
    "data_dir": ({"type": "string"}, "the data folder, resolved"),
    "artifacts": (_STRING_LIST, "files the scripts wrote (relative to run_dir), e.g. plots"),
    "sandbox": ({"type": "object", "required": ["level"]}, "how generated code was isolated"),
    "warnings": (_STRING_LIST, "what the user should know about this run, e.g. that `sandbox.tier: auto` found "
                 "nothing better than the basic tier here"),
    "error_kind": ({"type": ["string", "null"]}, "model_config, model_unreachable, internal (a dsstar bug), SIGINT or SIGTERM; else null"),
    "exit_code": ({"type": "integer"}, "the process exit code this result maps to"),
}
OPTIONAL_FIELDS = {"id"}


ERROR_KINDS = ("usage", "config", "data_folder", "error", "interrupted")
ERROR_SCHEMA = {
    "title": "dsstar error: the run could not start",
    "type": "object",
    "required": ["schema_version", "dsstar_version", "outcome", "verified", "answer", "question", "error",
                 "exit_code"],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION}, "dsstar_version": {"type": "string"},
        "outcome": {"const": "error", "description": "the run could not start (bad arguments, config, folder)"},
        "verified": {"const": False}, "answer": {"type": "null"},
        "question": {"type": ["string", "null"], "description": "the question, when one was given"},
        "error": {"type": "object", "required": ["kind", "message"],
                  "properties": {"kind": {"enum": list(ERROR_KINDS)}, "message": {"type": "string"}}},
        "exit_code": {"type": "integer"},
    },
}


_MESSAGES = {"type": "array", "items": {"type": "object", "required": ["role", "content"], "properties": {
    "role": {"enum": ["system", "user", "assistant"]}, "content": {"type": "string"}}}}
_COST = {"type": ["number", "null"], "description": "dollars for that input at litellm's offline price map; null "
                                                    "when the model is unpriced (or none is configured)"}
DRY_RUN_SCHEMA = {
    "title": "dsstar dry run (ask --dry-run): the first prompts of a run, not sent",
    "type": "object",
    "required": ["schema_version", "dsstar_version", "outcome", "sent", "question", "questions", "data_dir", "model",
                 "sandbox", "calls", "messages", "input_tokens", "cost_usd", "token_count", "files",
                 "credentials_missing", "notes", "exit_code"],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION}, "dsstar_version": {"type": "string"},
        "outcome": {"const": "dry_run"}, "sent": {"const": False, "description": "nothing was sent to any model"},
        "question": {"type": ["string", "null"], "description": "the question (null in batch mode: see questions)"},
        "guidelines": {"type": ["string", "null"]},
        "questions": {"type": "array", "items": {"type": "object", "required": ["id", "question"], "properties": {
            "id": {"type": ["string", "null"]}, "question": {"type": "string"},
            "guidelines": {"type": ["string", "null"]}}}, "description": "every question a run would ask"},
        "data_dir": {"type": "string", "description": "the data folder, resolved"},
        "model": {"type": ["string", "null"], "description": "the default model; null when none is configured"},
        "sandbox": {"enum": ["strong", "medium", "basic"], "description": "the tier a real run's scripts get here "
                    "(a dry run fails as a real run would when sandbox.require cannot be met)"},
        "calls": {"type": "array", "description": "the calls a run makes first, in order: the analyzer's for files "
                  "only the model can describe, then the planner's first step (one per question)",
                  "items": {"type": "object", "required": ["id", "role", "model", "about", "messages",
                                                           "input_tokens", "cost_usd"],
                            "properties": {"id": {"type": ["string", "null"]}, "role": {"type": "string"},
                                           "model": {"type": ["string", "null"]}, "about": {"type": "string"},
                                           "messages": _MESSAGES, "input_tokens": {"type": "integer", "minimum": 0},
                                           "cost_usd": _COST}}},
        "messages": {"type": "integer", "minimum": 0, "description": "messages in all the calls"},
        "input_tokens": {"type": "integer", "minimum": 0, "description": "input tokens of all the calls"},
        "cost_usd": _COST,
        "token_count": {"type": "object", "required": ["method", "exact"], "properties": {
            "method": {"type": "string"}, "exact": {"type": "boolean", "description": "counted with the model's "
                                                                                     "own tokenizer"}}},
        "files": {"type": "array", "items": {"type": "object", "required": ["path", "format", "method", "cached",
                                                                             "in_prompt"]},
                  "description": "every analysed file; in_prompt: described in a prompt (else listed by name)"},
        "credentials_missing": _STRING_LIST,
        "notes": _STRING_LIST,
        "exit_code": {"const": 0},
    },
}


def json_schema() -> dict[str, Any]:
    """The JSON Schema of what `--json` prints (what `dsstar schema` prints): a run's result, the
    error object of a run that could not start (outcome "error"), or a dry run (outcome "dry_run")."""
    result = {
        "title": "dsstar result",
        "type": "object",
        "required": [name for name in RESULT_FIELDS if name not in OPTIONAL_FIELDS],
        "properties": {name: {**schema, "description": text} for name, (schema, text) in RESULT_FIELDS.items()},
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://dsstar.dev/schema/result-v{SCHEMA_VERSION}.json",
        "title": "dsstar --json output",
        "oneOf": [result, ERROR_SCHEMA, DRY_RUN_SCHEMA],
        "$defs": {"result": result, "error": ERROR_SCHEMA, "dry_run": DRY_RUN_SCHEMA},
    }
