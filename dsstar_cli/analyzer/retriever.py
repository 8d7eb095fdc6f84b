"""Retriever: when a folder has too many files, or their descriptions too many tokens, only the
descriptions most relevant to the question go into prompts; the rest are listed by path so the
planner knows they exist (and can ask for them by name).

Ranking is lexical by default (no model call, no index to build): BM25 of the question's terms
over each file's name, counted three times, plus BM25 over its description (columns and values),
each field normalised on its own, so a short per-state file that shares one word with the question
does not outrank the file whose name says what the question asks. Files scoring under a fraction
of the best are left out even when the budget would hold them: described noise costs every call.
With an embedding model configured, files are ranked by cosine similarity of embeddings (DS-STAR's
method); if that fails, BM25 is used and the reason recorded. Documents (Markdown, text) are never
ranked away: they carry the rules, and have their own budget (documents.py).
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from dsstar_cli.analyzer import FileDescription, bigdata
from dsstar_cli.analyzer.documents import DOCUMENT_FORMATS
from dsstar_cli.analyzer.gist import gist
from dsstar_cli.analyzer.terms import terms
from dsstar_cli.quoting import quote

CHARS_PER_TOKEN = 4
MAX_LISTED = 500  # Paths listed beyond the described files; more would crowd the prompt.
NAME_WEIGHT = 3.0
RELEVANT_FRACTION = 0.25  # Below this share of the best score a file is only listed by name.
GIST_FOLDER_MAX = 40      # A folder listing this few files gives each a line with its gist (gist.py).

Embed = Callable[[list[str]], list[list[float]]]


@dataclass
class Selection:
    described: list[FileDescription]                           # in prompts, most relevant first
    listed: list[FileDescription] = field(default_factory=list)  # named only
    method: str = "all"                                         # all | bm25 | embedding
    note: str = ""                                              # e.g. why embeddings were not used


def bm25_scores(query: str, documents: Sequence[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
    docs = [Counter(terms(d)) for d in documents]
    lengths = [sum(d.values()) for d in docs]
    average = sum(lengths) / max(len(docs), 1) or 1.0
    frequency = Counter(word for d in docs for word in d)
    scores = []
    for doc, length in zip(docs, lengths):
        score = 0.0
        for word in set(terms(query)):
            if word in doc:
                idf = math.log(1 + (len(docs) - frequency[word] + 0.5) / (frequency[word] + 0.5))
                tf = doc[word]
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))
        scores.append(score)
    return scores


def cosine_scores(query: str, documents: Sequence[str], embed: Embed) -> list[float]:
    vectors = embed([query, *documents])
    head, rest = vectors[0], vectors[1:]

    def cosine(u: list[float], v: list[float]) -> float:
        norm = math.sqrt(sum(x * x for x in u)) * math.sqrt(sum(x * x for x in v))
        return sum(x * y for x, y in zip(u, v)) / norm if norm else 0.0

    return [cosine(head, v) for v in rest]


def _tokens_of(file: FileDescription) -> int:
    return len(file.as_prompt()) // CHARS_PER_TOKEN


def lexical_scores(question: str, files: Sequence[FileDescription]) -> list[float]:
    """BM25 over names (weighted) plus BM25 over descriptions, each field normalised on its own."""
    names = bm25_scores(question, [f.path for f in files])
    bodies = bm25_scores(question, [f.description for f in files])
    return [NAME_WEIGHT * n + b for n, b in zip(names, bodies)]


def select_files(files: list[FileDescription], question: str, max_files: int, max_tokens: int,
                 embed: Embed | None = None) -> Selection:
    """All files when they fit; else documents plus the best-ranked tables within `max_files` and
    `max_tokens`, leaving out those far less relevant than the best."""
    documents = [f for f in files if f.format in DOCUMENT_FORMATS]
    tables = [f for f in files if f.format not in DOCUMENT_FORMATS]
    if len(tables) <= max_files and sum(_tokens_of(f) for f in tables) <= max_tokens:
        return Selection(list(files))
    method, note = "bm25", ""
    if embed is not None:
        try:
            texts = [f"{f.path} {f.path} {f.description}"[:8000] for f in tables]
            scores, method = cosine_scores(question, texts, embed), "embedding"
        except Exception as exc:  # A failing embedding model must not end the run: rank lexically.
            note = f"embedding ranking failed ({type(exc).__name__}: {str(exc)[:120]}); used BM25"
    if method == "bm25":
        scores = lexical_scores(question, tables)
    order = sorted(range(len(tables)), key=lambda i: (-scores[i], tables[i].path))
    best = max(scores[order[0]], 0.0) if order else 0.0
    chosen, budget = [], max_tokens
    for i in order:
        cost = _tokens_of(tables[i])
        relevant = method == "embedding" or scores[i] >= RELEVANT_FRACTION * best
        if len(chosen) < max_files and (not chosen or (cost <= budget and relevant)):
            chosen.append(i)
            budget -= cost
    listed = [tables[i] for i in sorted(set(range(len(tables))) - set(chosen), key=lambda i: tables[i].path)]
    return Selection(documents + [tables[i] for i in chosen], listed, method, note)


def files_prompt(selection: Selection) -> str:
    """The file-description block: the described files, then the others listed: one line each with
    its gist while a folder lists few of them (GIST_FOLDER_MAX), else one line per folder (a folder
    of 52 per-state files costs one line, not 52)."""
    text = "\n\n".join(_quoted(f) for f in selection.described)
    steer = bigdata.note(selection.described)  # Only when some file is too big for pandas.
    text = f"{steer}\n\n{text}" if steer else text
    if selection.listed:
        shown = selection.listed[:MAX_LISTED]
        folders: dict[str, list[FileDescription]] = {}
        for f in shown:
            folders.setdefault(f.path.rpartition("/")[0], []).append(f)
        lines = []
        for folder, files in folders.items():
            if len(files) <= GIST_FOLDER_MAX:
                lines += [f"- {f.path}: {gist(f.format, f.description)}" for f in files]
            else:
                names = ", ".join(f.path.rpartition("/")[2] for f in files)
                lines.append(f"- {folder + '/' if folder else '(top folder) '}{len(files)} files: {names}")
        if len(selection.listed) > MAX_LISTED:
            lines.append(f"- ... and {len(selection.listed) - MAX_LISTED} more")
        text += (f"\n\n## Other files in the folder ({len(selection.listed)}, not described here: "
                 "one line each on what it holds, where its folder lists few; load one and inspect it if the question "
                 "needs it)\n" + quote("\n".join(lines), "other files in the folder (names and gists)"))
    return text


def _quoted(f: FileDescription) -> str:
    """A file's heading, then its description quoted as data (it holds the file's cells and text)."""
    heading, _, description = f.as_prompt().partition("\n")
    return f"{heading}\n{quote(description, f'{f.path} (description)')}"


def litellm_embedder(model: str, api_base: str | None, timeout_s: float, deadline: float | None = None) -> Embed:
    """Embeddings through litellm, in batches (providers cap the inputs per request). Each request is
    bounded by wall clock (`timeout_s`, and the run's `deadline`): a server that drips bytes or never
    answers makes ranking fall back to BM25, not hang the run."""

    def embed(texts: list[str]) -> list[list[float]]:
        from dsstar_cli.deadlines import bounded_call, earliest
        from dsstar_cli.model import PLACEHOLDER_KEY, import_litellm

        litellm = import_litellm()
        vectors: list[list[float]] = []
        for start in range(0, len(texts), 96):
            args = {"model": model, "input": texts[start:start + 96], "timeout": timeout_s}
            if api_base:
                args["api_base"] = api_base
                if model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
                    args["api_key"] = PLACEHOLDER_KEY  # A local server needs none; litellm insists.
            response = bounded_call(lambda: litellm.embedding(**args), earliest(time.monotonic() + timeout_s, deadline))
            vectors.extend(item["embedding"] for item in response.data)
        return vectors

    return embed
