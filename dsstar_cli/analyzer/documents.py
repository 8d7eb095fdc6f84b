"""Documents (Markdown and text files) carry the rules a correct answer follows: definitions,
formulas, "a null field applies to all values". They go into prompts whole, ahead of the tables,
up to a budget; a document above its share is shown as its outline plus the sections the
question's terms hit, each in full, so the rules the question needs are there without a step
spent printing the file."""

from __future__ import annotations

import re
from collections import Counter

from dsstar_cli.analyzer import FileDescription
from dsstar_cli.analyzer.terms import terms
from dsstar_cli.analyzer.text_profiler import IN_FULL
from dsstar_cli.quoting import quote

DOCUMENT_FORMATS = frozenset({"markdown", "text"})
HEADING = re.compile(r"^(#{1,6})\s+(.+)$")
MAX_OUTLINE = 60


def full_text(doc: FileDescription) -> str | None:
    """The document's whole text when its description holds it, else None."""
    first, _, rest = doc.description.partition("\n")
    return rest if first.rstrip().endswith(IN_FULL) else None


def sections(text: str) -> list[tuple[int, str, str]]:
    """(first line number, heading, text) per Markdown section; paragraphs when there are no headings."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if HEADING.match(line)]
    if not starts:
        blocks, start = [], 0
        for i, line in enumerate(lines + [""]):
            if not line.strip():
                if i > start:
                    blocks.append((start + 1, lines[start].strip()[:80], "\n".join(lines[start:i])))
                start = i + 1
        return blocks
    if starts[0] > 0:
        starts.insert(0, 0)
    bounds = zip(starts, starts[1:] + [len(lines)])
    return [(a + 1, lines[a].strip(), "\n".join(lines[a:b]).rstrip()) for a, b in bounds]


def excerpt(doc: FileDescription, text: str, question: str, budget: int) -> str:
    """The outline, then the sections the question's terms hit most (in document order) within `budget`."""
    parts = sections(text)
    wanted = Counter(terms(question))
    outline = [f"  line {n}: {head}" for n, head, _ in parts if HEADING.match(head)][:MAX_OUTLINE]
    head = (f"{len(text):,} characters: too long to show whole here, so its outline and the sections that "
            f"mention the question's terms follow (read the file for the rest).")
    room = budget - len(head) - sum(len(line) + 1 for line in outline) - 100

    def score(body: str) -> float:
        found = Counter(terms(body))
        return sum(min(found[t], 3) for t in wanted) / (1 + len(body) / 4000)

    ranked = sorted(range(len(parts)), key=lambda i: -score(parts[i][2]))
    chosen = []
    for i in ranked:
        if score(parts[i][2]) <= 0:
            break
        if len(parts[i][2]) + 2 <= room:
            chosen.append(i)
            room -= len(parts[i][2]) + 2
    body = "\n\n".join(parts[i][2] for i in sorted(chosen)) or "(no section mentions the question's terms)"
    lines = [head] + (["Outline:"] + outline if outline else []) + ["Sections for this question:", body]
    return "\n".join(lines)


def documents_prompt(docs: list[FileDescription], question: str, budget_chars: int) -> str:
    """Every document, whole while the budget allows (smallest first), else as an excerpt of its share."""
    texts = {doc.path: full_text(doc) for doc in docs}
    shown: dict[str, str] = {}
    left = budget_chars
    for doc in sorted(docs, key=lambda d: len(texts[d.path] or d.description)):
        text = texts[doc.path]
        if text is None:  # Not read whole (too big): its description is what there is.
            shown[doc.path] = doc.description[: max(left, 2000)]
        elif len(text) <= left:
            shown[doc.path] = f"(in full)\n{text.strip()}"
        else:
            pending = len([d for d in docs if d.path not in shown])
            shown[doc.path] = excerpt(doc, text, question, max(left // max(pending, 1), 2000))
        left -= len(shown[doc.path])
    return "\n\n".join(f"## {doc.path} ({doc.format}, {doc.size_bytes:,} bytes)\n"
                       + quote(shown[doc.path], f"{doc.path} (document)") for doc in docs)
