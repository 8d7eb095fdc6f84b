"""`dsstar ask --dry-run`: everything a run does up to its first model call, then the prompts, unsent.

The same checks (question, folder, model id), the same analysis (the description cache used and
filled), the same retrieval and shared context as a real run; then the messages of the calls it
would make first: the analyzer's, one per file no built-in profiler knows and the cache does not
hold, and the planner's first step. Nothing is sent, no sandbox worker starts, no run folder or
history entry is written; missing credentials are reported, not fatal.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from dsstar_cli import __version__
from dsstar_cli import model as model_mod
from dsstar_cli.analyzer import FileDescription, analyze_folder
from dsstar_cli.analyzer.limits import ProfileError
from dsstar_cli.analyzer.llm_describer import describe_messages
from dsstar_cli.analyzer.retriever import CHARS_PER_TOKEN, Selection, select_files
from dsstar_cli.config import ROLES, Config
from dsstar_cli.events import Sink
from dsstar_cli.model import Messages
from dsstar_cli.model_check import check_model
from dsstar_cli.result import SCHEMA_VERSION
from dsstar_cli.roles import planner
from dsstar_cli.engine import EngineSettings
from dsstar_cli.engine.note import local_note
from dsstar_cli.engine.tables import duckdb_setup
from dsstar_cli.roles.context import build_context
from dsstar_cli.runner import analyzer_limits, check_data_folder, check_question, check_usable, description_cache
from dsstar_cli.sandbox import tiers
from dsstar_cli.secrets import redact, secret_values

# A one-round run makes 4 calls (planner, coder, verifier, finalizer); each further round adds the
# router, planner, coder and verifier. What benchmarks/ACCURACY.md measured, per task:
CALLS_NOTE = ("a real run makes several calls per round, each starting with this shared context: at least 4 for "
              "one round (planner, coder, verifier, finalizer), 4 more per further round; the benchmarks "
              "(benchmarks/ACCURACY.md) measured 4-6 calls per task, so expect several times this input")
NOT_DESCRIBED = "in a real run the model describes it (the analyzer call above); a dry run makes no model call"


@dataclass
class Call:
    role: str
    model: str | None
    messages: Messages
    about: str                     # the file an analyzer call describes, or the question
    id: str | None = None          # batch mode: the question's id
    input_tokens: int = 0
    cost_usd: float | None = None  # None: unpriced (or no model)

    def as_dict(self, shown: Messages) -> dict:
        return {"id": self.id, "role": self.role, "model": self.model, "about": self.about, "messages": shown,
                "input_tokens": self.input_tokens, "cost_usd": _rounded(self.cost_usd)}


@dataclass
class DryRun:
    data_dir: Path
    questions: list[tuple[str | None, str, str | None]]  # (id, question, guidelines)
    files: list[FileDescription]
    selections: list[Selection]
    calls: list[Call] = field(default_factory=list)
    token_count: str = ""          # how the tokens were counted
    exact: bool = False            # counted with the model's own tokenizer
    credentials: list[str] = field(default_factory=list)  # variables a real run needs and that are not set
    notes: list[str] = field(default_factory=list)
    model: str | None = None
    sandbox: str | None = None     # the tier a real run's scripts would get here

    @property
    def input_tokens(self) -> int:
        return sum(call.input_tokens for call in self.calls)

    @property
    def cost_usd(self) -> float | None:
        costs = [call.cost_usd for call in self.calls]
        return None if not costs or None in costs else sum(costs)

    def shown(self, messages: Messages) -> Messages:
        """The messages as printed: exactly as sent, but with any credential value masked."""
        secrets = secret_values()
        return [{**m, "content": redact(m["content"], secrets)} for m in messages] if secrets else messages

    def as_dict(self) -> dict:
        described = {f.path for selection in self.selections for f in selection.described}
        single = len(self.questions) == 1 and self.questions[0][0] is None
        return {
            "schema_version": SCHEMA_VERSION, "dsstar_version": __version__, "outcome": "dry_run", "sent": False,
            "question": self.questions[0][1] if single else None,
            "guidelines": self.questions[0][2] if single else None,
            "questions": [{"id": qid, "question": q, "guidelines": g} for qid, q, g in self.questions],
            "data_dir": str(self.data_dir), "model": self.model, "sandbox": self.sandbox,
            "calls": [call.as_dict(self.shown(call.messages)) for call in self.calls],
            "messages": sum(len(call.messages) for call in self.calls),
            "input_tokens": self.input_tokens, "cost_usd": _rounded(self.cost_usd),
            "token_count": {"method": self.token_count, "exact": self.exact},
            "files": [{"path": f.path, "format": f.format, "size_bytes": f.size_bytes, "method": f.method,
                       "cached": f.cached, "error": f.error, "in_prompt": f.path in described} for f in self.files],
            "credentials_missing": self.credentials, "notes": self.notes + [CALLS_NOTE], "exit_code": 0,
        }


def dry_run(data_dir: Path, questions: list[tuple[str | None, str, str | None]], config: Config,
            emit: Sink, started: float | None = None) -> DryRun:
    """The first calls of a run (or of every question of a batch, over one analysis), unsent."""
    questions = [(qid, check_question(q), g) for qid, q, g in questions]
    folder = check_data_folder(data_dir)
    credentials, notes = check_models(config)
    sandbox = tiers.for_scripts(config["sandbox.tier"], config["sandbox.require"])  # Fails as a real run would.
    files, analyzer_calls = analyse(folder, config, emit, started)
    check_usable(files, folder)  # Refused as a real run would be.
    # The local analyzer and DuckDB's tables, whatever the engine (README, 'Past one machine').
    caps = EngineSettings("duckdb", max_rows=config["query.max_rows"], max_bytes=config["query.max_mb"] << 20)
    engine_note = local_note(duckdb_setup(files, str(folder), caps.max_rows, caps.max_bytes), files)
    if analyzer_calls:
        notes.append(f"{len(analyzer_calls)} file(s) only the model can describe: a real run's planner sees the "
                     "model's description where these prompts say it makes none")
    dry = DryRun(folder, questions, files, [], analyzer_calls, credentials=credentials, notes=notes,
                 model=config["model"], sandbox=sandbox)
    for qid, question, guidelines in questions:
        selection = select_files(files, question, config["retriever.max_files"],
                                 config["retriever.max_description_tokens"])
        if selection.method != "all" and config["retriever.embedding_model"]:
            dry.notes.append(f"a real run ranks the files by embeddings from {config['retriever.embedding_model']} "
                             "(a model call); this dry run ranked them by BM25, so the files shown may differ")
        context = build_context(question, guidelines, str(folder), selection,
                                config["retriever.max_document_tokens"] * CHARS_PER_TOKEN,
                                config["retriever.max_description_tokens"], engine_note=engine_note)
        dry.selections.append(selection)
        dry.calls.append(Call(planner.ROLE, config.model_for(planner.ROLE), planner.first_step_messages(context),
                              question, qid))
    for name in sorted({call.model for call in dry.calls if call.model and model_mod.uses_cache_control(call.model)}):
        dry.notes.append(f"{name}: the system message (the shared context) is sent as two blocks marked "
                         "cache_control, split before '# Data files'; the text is as shown")
    dry.token_count, dry.exact = count(dry.calls)
    dry.notes = list(dict.fromkeys(dry.notes))
    return dry


def check_models(config: Config) -> tuple[list[str], list[str]]:
    """A real run's model checks, except that missing credentials and a missing model are told, not
    fatal: (credential variables not set, notes). An unknown model id fails as in a real run."""
    names = {config.model_for(role) for role in ROLES}
    notes, missing = [], []
    if None in names:
        notes.append("no model configured: a real run needs --model (e.g. --model openai/gpt-4.1), DSSTAR_MODEL "
                     "or `model` in dsstar.yaml; tokens are an estimate and there is no price")
    for name in sorted(n for n in names if n):
        needed = check_model(name, config)  # An unknown id or an unpriced --max-cost fails as in a run.
        if needed:
            missing.append(" or ".join(needed))
            notes.append(f"a real run with {name} needs the environment variable {' or '.join(needed)} (not set)")
    return missing, notes


def analyse(folder: Path, config: Config, emit: Sink,
            started: float | None) -> tuple[list[FileDescription], list[Call]]:
    """The run's analysis, with its cache: a file only the model could describe is not described
    (and not cached); the analyzer's request for it is recorded instead."""
    limits = analyzer_limits(config)
    mode = config["analyzer.mode"]
    describing_model = config.model_for("analyzer") if mode != "builtin" else None
    calls: list[Call] = []

    def record(path: Path, name: str) -> str:
        calls.append(Call("analyzer", describing_model, describe_messages(path, name), name))
        raise ProfileError(NOT_DESCRIBED)

    timeout = config["budget.timeout_s"]
    files = analyze_folder(folder, limits, emit, mode, record, cache=description_cache(config, folder),
                           cache_context=f"describer={describing_model}", follow_links=config["follow_links"],
                           deadline=(started or time.monotonic()) + timeout if timeout else None)
    return files, calls


def count(calls: list[Call]) -> tuple[str, bool]:
    """Each call's input tokens and the cost of that input; says how they were counted."""
    litellm = model_mod.import_litellm()
    litellm.disable_hf_tokenizer_download = True  # Offline: no tokenizer fetched from the Hugging Face hub.
    methods, exact = set(), True
    for call in calls:
        call.input_tokens, method, own = input_tokens(litellm, call.model, call.messages)
        methods.add(method)
        exact = exact and own
        priced = call.model is not None and model_mod.is_priced(call.model)
        call.cost_usd = _input_cost(litellm, call.model, call.input_tokens) if priced else None
    return "; ".join(sorted(methods)), exact


def input_tokens(litellm, model: str | None, messages: Messages) -> tuple[int, str, bool]:
    """(tokens, how they were counted, whether that is the model's own tokenizer). OpenAI's models are
    counted exactly (tiktoken, through litellm.token_counter); others with OpenAI's tokenizer, an
    estimate; characters / 4 when even that fails."""
    try:
        bare, provider = (litellm.get_llm_provider(model=model)[:2]) if model else ("", None)
        own = provider in ("openai", "azure") and bare in litellm.open_ai_chat_completion_models
        tokens = litellm.token_counter(model=bare if own else "", messages=messages)
        return int(tokens), ("litellm.token_counter" if own else
                             "estimate: litellm.token_counter with OpenAI's tokenizer (the model's own may differ)"), own
    except Exception:
        chars = sum(len(m["content"]) for m in messages)
        return chars // CHARS_PER_TOKEN, f"estimate: characters / {CHARS_PER_TOKEN}", False


def _input_cost(litellm, model: str, tokens: int) -> float | None:
    try:
        return float(litellm.cost_per_token(model=model, prompt_tokens=tokens, completion_tokens=0)[0])
    except Exception:
        return None


def _rounded(cost: float | None) -> float | None:
    return None if cost is None else round(cost, 6)


# -- what the command prints --------------------------------------------------------------------

def prompts_text(dry: DryRun) -> str:
    """Every call's messages, whole, as they would be sent (stdout: `> prompts.txt`, `| less`)."""
    out = []
    for number, call in enumerate(dry.calls, 1):
        asked = f" [{call.id}]" if call.id is not None else ""
        what = f"describes {call.about}" if call.role == "analyzer" else "first step"
        out.append(f"===== call {number} of {len(dry.calls)}{asked}: {call.role} ({what}), model "
                   f"{call.model or '(none configured)'}, {len(call.messages)} messages, "
                   f"{call.input_tokens:,} input tokens =====")
        for message in dry.shown(call.messages):
            out.append(f"----- {message['role']} -----")
            out.append(message["content"].rstrip("\n"))
        out.append("")
    return "\n".join(out)


def summary_lines(dry: DryRun) -> list[str]:
    """What the terminal shows on stderr after the prompts."""
    described = {f.path for selection in dry.selections for f in selection.described}
    cached = sum(f.cached for f in dry.files)
    cost = dry.cost_usd
    models = sorted({call.model or "(none configured)" for call in dry.calls})
    lines = [
        "dry run: nothing was sent (no model call, no sandbox, no run folder)",
        f"  model         {', '.join(models)}",
        f"  calls shown   {len(dry.calls)} ({', '.join(dict.fromkeys(c.role for c in dry.calls))}), "
        f"{sum(len(c.messages) for c in dry.calls)} messages",
        f"  input tokens  {dry.input_tokens:,} ({dry.token_count})",
        f"  input cost    {f'${cost:.4f} (litellm price map)' if cost is not None else 'unpriced'}",
        f"  sandbox       {dry.sandbox} (the tier a real run's scripts get here)",
        f"  files         {len(dry.files)} analysed ({cached} from the cache), {len(described)} described in "
        f"the prompt{'s' if len(dry.questions) > 1 else ''}",
    ]
    lines += [f"  note          {note}" for note in dry.notes + [CALLS_NOTE]]
    return lines


def batch_questions(questions_file: Path, out: Path | None) -> list[tuple[str | None, str, str | None]]:
    """`ask --questions FILE --dry-run`: the questions a real batch would ask (those not yet answered in --out)."""
    from dsstar_cli.batch import answered_ids, read_questions

    done = answered_ids(out)
    return [(q.id, q.question, q.guidelines) for q in read_questions(questions_file) if q.id not in done]
