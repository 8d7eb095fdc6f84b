"""The run's shared context: one text every role's prompt starts with, identical across the run's
calls, so providers' prompt caching applies (Anthropic's through `cache_control`, OpenAI's and
Gemini's on long identical prefixes).

    full  = intro + documents + question + answer format + data files   (planner, coder, debugger, router)
    brief = intro + documents + question + answer format                (verifier, finalizer)

`brief` is a prefix of `full`, so the cache written by one role serves the other. The role's own
instructions and its changing material (plan, script, output) follow in the user message.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsstar_cli.analyzer.absent import absent_note
from dsstar_cli.analyzer.documents import DOCUMENT_FORMATS, documents_prompt
from dsstar_cli.analyzer.retriever import Selection, files_prompt

DEFAULT_GUIDELINES = ("None given: answer concisely (a number, a name, a list or one short sentence); "
                      "keep numbers as computed unless the question asks for rounding.")
TABLES_HEADING = "# Data files"  # Where `brief` ends inside `full` (a cache breakpoint: see model.py).
INTRO = ("This is dsstar, a data-science agent: it answers a question about a folder of data files by planning "
         "steps, writing and running Python, and checking the result. What follows is shared by every role; "
         "your role and task come after it.")


@dataclass(frozen=True)
class RunContext:
    full: str
    brief: str
    data_dir: str


def build_context(question: str, guidelines: str | None, data_dir: str, selection: Selection,
                  document_chars: int) -> RunContext:
    """Documents (in full up to `document_chars`, else outline plus the sections the question hits)
    go before the question; the tables' descriptions after it, so `brief` is a prefix of `full`."""
    documents = [f for f in selection.described + selection.listed if f.format in DOCUMENT_FORMATS]
    tables = Selection([f for f in selection.described if f.format not in DOCUMENT_FORMATS],
                       [f for f in selection.listed if f.format not in DOCUMENT_FORMATS])
    parts = [INTRO, f'DATA_DIR = "{data_dir}" (read-only; every file below is relative to it)']
    if documents:
        parts.append("# Documents (their rules and definitions apply to the answer)\n"
                     + documents_prompt(documents, question, document_chars))
    parts.append(f"# Question\n{question}")
    parts.append(f"# Answer format\n{guidelines or DEFAULT_GUIDELINES}")
    brief = "\n\n".join(parts)
    count = len(tables.described) + len(tables.listed)
    full = f"{brief}\n\n{TABLES_HEADING} ({count})\n{files_prompt(tables) or '(none)'}"
    full += absent_note(documents, data_dir)  # Files the documents name that the folder lacks.
    return RunContext(full=full, brief=brief, data_dir=data_dir)
