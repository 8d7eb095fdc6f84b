"""The run's shared context: one text every role's prompt starts with, identical across the run's
calls, so providers' prompt caching applies (Anthropic's through `cache_control`, OpenAI's and
Gemini's on long identical prefixes).

    full  = intro + documents + question + answer format + data files + querying   (planner, coder, debugger, router)
    brief = intro + documents + question + answer format
    brief + the data files a script reads                               (verifier, finalizer: `for_script`)

`brief` is a prefix of both others, so the cache written by one role serves the rest. The verifier
and the finalizer see only the files the script they judge reads: enough to check its reading of a
column against that column's profile, without every other file's description. The role's own
instructions and its changing material (plan, script, output) follow in the user message.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dsstar_cli.analyzer import FileDescription
from dsstar_cli.analyzer.absent import absent_note
from dsstar_cli.analyzer.documents import DOCUMENT_FORMATS, documents_prompt
from dsstar_cli.analyzer.retriever import Selection, files_prompt, select_files
from dsstar_cli.quoting import RULE as QUOTING_RULE

DEFAULT_GUIDELINES = ("None given: answer concisely (a number, a name, a list or one short sentence); "
                      "keep numbers as computed unless the question asks for rounding.")
TABLES_HEADING = "# Data files"  # Where `brief` ends inside `full` (a cache breakpoint: see model.py).
USED_HEADING = "# Data files the script reads"  # Starts like TABLES_HEADING: the same cache breakpoint.
DESCRIPTION_TOKENS = 6000  # The tables' budget when none is given (retriever.max_description_tokens).
INTRO = ("This is dsstar, a data-science agent: it answers a question about a folder of data files by planning "
         "steps, writing and running Python, and checking the result. What follows is shared by every role; "
         "your role and task come after it. " + QUOTING_RULE)


@dataclass(frozen=True)
class RunContext:
    full: str
    brief: str
    data_dir: str
    tables: tuple[FileDescription, ...] = ()  # Every table (described or listed): what a script may read.
    question: str = ""
    description_tokens: int = DESCRIPTION_TOKENS

    def for_script(self, code: str) -> str:
        """`brief` plus the descriptions of the data files `code` reads, fitted to the tables' budget
        as the retriever fits them (the question's best matches described, the rest listed)."""
        used = [f for f in self.tables if f.path in files_used(self.tables, [code])]
        if not used:
            return self.brief
        chosen = select_files(used, self.question, len(used), self.description_tokens)
        return f"{self.brief}\n\n{USED_HEADING} ({len(used)})\n{files_prompt(chosen)}"


def files_used(files: list[FileDescription] | tuple[FileDescription, ...], scripts: list[str]) -> list[str]:
    """Data files the scripts name (by relative path or, when unambiguous, file name)."""
    code = "\n".join(scripts)
    names = [Path(f.path).name for f in files]
    return [f.path for f in files
            if f.path in code or (names.count(Path(f.path).name) == 1 and Path(f.path).name in code)]


def build_context(question: str, guidelines: str | None, data_dir: str, selection: Selection,
                  document_chars: int, description_tokens: int = DESCRIPTION_TOKENS,
                  earlier: str | None = None, engine_note: str = "", memory: str = "") -> RunContext:
    """Documents (in full up to `document_chars`, else outline plus the sections the question hits)
    go before the question; the tables' descriptions after it, so `brief` is a prefix of `full`.
    `earlier`: a follow-up's earlier run (followup.py, quoted and bounded), just before the question
    it explains, so every role reads "and for April?" beside the question it follows. `memory`: what
    earlier verified runs on the folder established (memory/knowledge.py), after the documents."""
    documents = [f for f in selection.described + selection.listed if f.format in DOCUMENT_FORMATS]
    tables = Selection([f for f in selection.described if f.format not in DOCUMENT_FORMATS],
                       [f for f in selection.listed if f.format not in DOCUMENT_FORMATS])
    parts = [INTRO, f'DATA_DIR = "{data_dir}" (read-only; every file below is relative to it)']
    if documents:
        parts.append("# Documents (their rules and definitions apply to the answer)\n"
                     + documents_prompt(documents, question, document_chars))
    if memory:
        parts.append(memory)
    if earlier:
        parts.append(earlier)
    parts.append(f"# Question\n{question}")
    parts.append(f"# Answer format\n{guidelines or DEFAULT_GUIDELINES}")
    brief = "\n\n".join(parts)
    count = len(tables.described) + len(tables.listed)
    full = f"{brief}\n\n{TABLES_HEADING} ({count})\n{files_prompt(tables) or '(none)'}"
    full += absent_note(documents, data_dir)  # Files the documents name that the folder lacks.
    full += f"\n\n{engine_note}" if engine_note else ""  # How scripts query the tables (dsstar.sql).
    return RunContext(full=full, brief=brief, data_dir=data_dir, tables=tuple(tables.described + tables.listed),
                      question=question, description_tokens=description_tokens)
