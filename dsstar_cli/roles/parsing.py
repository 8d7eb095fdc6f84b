"""Tolerant readers for model replies. Each returns None when the reply does not say the thing
asked for, so the caller can re-ask once and then apply its documented fallback."""

from __future__ import annotations

import ast
import re

FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
CODE_LANGS = {"", "python", "py", "python3"}
STEP_REF = re.compile(r"\bstep\s*#?\s*(\d+)\b", re.IGNORECASE)
ADD_STEP = re.compile(r"\badd(?:ing)?\s+(?:a\s+|one\s+|another\s+|the\s+)?(?:new\s+|next\s+)?step\b", re.IGNORECASE)
# A separator ends the prefix only when a space follows it (or ':'): "2023.csv" and "step1.csv" are names.
STEP_PREFIX = re.compile(r"^\s*(?:[-*•]\s+)?(?:\*\*)?(?:(?:next|first|new)\s+)?"
                         r"(?:step\s*\d*\s*(?::|[.)-](?=\s|$))|\d+\s*[.)](?=\s|$))?(?:\*\*)?\s*", re.IGNORECASE)
# Markdown characters, each replaced by a space in the copy a decision is read from: positions stay the same,
# so the model's own text can be kept from where the decision ends.
MARKUP = re.compile(r"[*_`#>]")
# What closes a decision ("**No.** -", "Add Step:"): emphasis that no word follows, punctuation, spaces.
AFTER_DECISION = re.compile(r"(?:[\s:.,;!\-—–]|[*_`]++(?=[\s:.,;!\-—–]|$))*")


def extract_code(reply: str) -> str | None:
    """The Python script in a reply: the longest Python (or unlabelled) fenced block, else the
    whole reply when it parses as Python on its own."""
    blocks = [body for lang, body in FENCE.findall(reply) if lang.lower() in CODE_LANGS and body.strip()]
    if blocks:
        return max(blocks, key=len).strip() + "\n"
    text = reply.strip()
    if not text or "\n" not in text and not text.startswith(("import ", "print(")):
        return None
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    return text + "\n"


def fenced_blocks(reply: str, lang: str) -> list[str]:
    """The text of every fenced block labelled `lang` (```answer), each stripped of blank lines
    around it and of trailing spaces on its lines."""
    return ["\n".join(line.rstrip() for line in body.strip("\n").splitlines()).strip()
            for label, body in FENCE.findall(reply) if label.lower() == lang]


def _plain_words(text: str) -> str:
    return re.sub(r"[*_`#>\"']", " ", text).strip().lower()


def parse_verdict(reply: str) -> bool | None:
    """Yes/No from the first line ("Yes.", "**No**", "Verdict: yes"), else a lone yes or no."""
    lines = [line for line in (_plain_words(l) for l in reply.splitlines()) if line]
    if not lines:
        return None
    first = re.sub(r"^(verdict|answer|decision)\s*[:\-]\s*", "", lines[0])
    if re.match(r"^(yes|sufficient)\b", first):
        return True
    if re.match(r"^(no|not sufficient|insufficient)\b", first):
        return False
    words = set(re.findall(r"\b(yes|no)\b", " ".join(lines)))
    return (words == {"yes"}) if len(words) == 1 else None


def verdict_reason(reply: str) -> str:
    """The verifier's why: its reply without the Yes/No word, on one line, bounded. The rest is the
    model's own text: names keep their `_`, `*` and backticks."""
    text = reply.strip()
    decision = re.match(r"^\W*(verdict|answer|decision)?\s*[:\-]?\s*\W*(yes|no|not sufficient|insufficient|sufficient)\b",
                        text, flags=re.IGNORECASE)
    if decision:
        text = _after_decision(text, decision.end())
    return at_word(one_line(text), REASON_CHARS)


REASON_CHARS = 1200  # A verifier's or router's reason: what the next role acts on (lab: one cut mid-sentence at 600).


def at_word(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut at a word and marked when it is longer."""
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " [...]"


def one_line(text: str) -> str:
    """The lines of `text` joined by spaces; the spaces inside a line are kept (a name may hold two)."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _after_decision(text: str, end: int) -> str:
    return text[AFTER_DECISION.match(text, end).end():]


def parse_route(reply: str, plan_length: int) -> tuple[str, int | None] | None:
    """("add", None) or ("fix", k) with 1 <= k <= plan_length; the earliest decision wins."""
    text = _plain_words(reply)
    add = ADD_STEP.search(text)
    steps = [m for m in STEP_REF.finditer(text) if 1 <= int(m.group(1)) <= plan_length]
    if add and (not steps or add.start() <= steps[0].start()):
        return ("add", None)
    if steps:
        return ("fix", int(steps[0].group(1)))
    return None


def route_why(reply: str, limit: int = REASON_CHARS) -> str:
    """The router's reason: what follows its first decision ("Step 2 - the filter is wrong" gives
    "the filter is wrong"), on one line, at most `limit` characters (cut at a word, marked)."""
    plain = MARKUP.sub(" ", reply)  # Read the decision here; keep the reason from `reply`.
    found = [m for m in (ADD_STEP.search(plain), STEP_REF.search(plain)) if m]
    why = one_line(_after_decision(reply, min(m.end() for m in found))) if found else ""
    return at_word(why, limit)


def parse_step(reply: str) -> str | None:
    """A plan step as plain text: fences and 'Step 3:'-style prefixes removed."""
    text = FENCE.sub(lambda m: m.group(2), reply).strip()
    lines = [STEP_PREFIX.sub("", line).strip() for line in text.splitlines()]
    step = " ".join(line for line in lines if line)
    return step[:1500] or None
