"""KramaBench's answer types, scored as its README describes: *_exact answers must match exactly,
approximate numbers by relative error, lists by F1 over their items.

Our reading, where the description leaves room: answers are trimmed; `numeric_exact` compares the
numbers (so "2,111,635" equals "2111635" and "40.0" equals "40"); `string_exact` ignores case;
`string_approximate` is a similarity ratio; a task counts as correct when its score is at least
CORRECT_AT.
"""

from __future__ import annotations

import ast
import re
from difflib import SequenceMatcher

CORRECT_AT = 0.99           # score a task needs to count as correct (exact types score 0 or 1)
APPROX_REL_ERROR = 0.01     # numeric_approximate: within 1 % scores 1.0, worse decays linearly
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def score(answer: str, expected, answer_type: str) -> float:
    """A score in [0, 1] for one answer."""
    kind = answer_type.lower()
    if kind.startswith("list"):
        return list_f1(parse_list(answer), parse_list(expected))
    if kind == "numeric_exact":
        a, b = to_number(answer), to_number(expected)
        return float(a is not None and b is not None and a == b)
    if kind == "numeric_approximate":
        return _approximate(to_number(answer), to_number(expected))
    if kind == "string_approximate":
        return SequenceMatcher(None, _norm(answer), _norm(expected)).ratio()
    return float(_norm(answer) == _norm(expected))


def correct(answer: str, expected, answer_type: str) -> bool:
    return score(answer, expected, answer_type) >= CORRECT_AT


def to_number(value) -> float | None:
    if isinstance(value, (int, float)):
        return float(value)
    found = _NUMBER.search(str(value).replace(",", "").replace("$", ""))
    return float(found.group()) if found else None


def _approximate(a: float | None, b: float | None) -> float:
    if a is None or b is None:
        return 0.0
    error = abs(a - b) / abs(b) if b else abs(a)
    return 1.0 if error <= APPROX_REL_ERROR else max(0.0, 1.0 - error)


def parse_list(value) -> list[str]:
    """A list answer: a JSON/Python list, or items separated by commas, semicolons or new lines."""
    if isinstance(value, (list, tuple)):
        return [_norm(item) for item in value]
    text = str(value).strip()
    if text.startswith("["):
        try:
            parsed = ast.literal_eval(text)
            if isinstance(parsed, (list, tuple)):
                return [_norm(item) for item in parsed]
        except (ValueError, SyntaxError):
            text = text.strip("[]")
    # A comma before a state code ("Boston-Cambridge-Newton, MA-NH ...") is part of a name, not a separator.
    return [_norm(item) for item in re.split(r"[;\n]|,(?!\s*[A-Z]{2}\b)", text) if item.strip()]


def list_f1(answer: list[str], expected: list[str]) -> float:
    if not answer or not expected:
        return float(answer == expected)
    common = len(set(answer) & set(expected))
    if not common:
        return 0.0
    precision, recall = common / len(set(answer)), common / len(set(expected))
    return 2 * precision * recall / (precision + recall)


def _norm(value) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return re.sub(r"\s+", " ", str(value)).strip().strip("'\"").strip().lower()
