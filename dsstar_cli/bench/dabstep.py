"""DABStep's answer matching, written from the rules in its official scorer (see
../shared/benchmarks/dabstep/README.md), quirks included, so our accuracy is comparable with the
leaderboard's. Do not "fix" a quirk here: a score is only worth what its rules are shared.
"""

from __future__ import annotations

import math
import re
from difflib import SequenceMatcher

# "Looks like a number": optional $, digits with optional thousands commas and decimals, or ".5".
_NUMBER_LIKE = re.compile(r"^\$?(\d{1,3}(,\d{3})*(\.\d+)?|\.\d+)$")
_FIRST_NUMBER = re.compile(r"(\d*\.\d+|\d+\.?\d*)%?")  # Unsigned: the minus sign is ignored.
_TOLERANCE = 1e-4


def match(answer: str, expected: str) -> bool:
    """True when `answer` counts as `expected` under DABStep's rules."""
    a, b = str(answer).strip().lower(), str(expected).strip().lower()
    if _NUMBER_LIKE.match(a) or _NUMBER_LIKE.match(b):
        x, y = first_number(a), first_number(b)
        return x is not None and y is not None and numbers_match(x, y)
    if any(sep in side for side in (a, b) for sep in ",;"):
        return lists_match(a, b)
    x, y = first_number(a), first_number(b)
    if x is not None and y is not None:
        return numbers_match(x, y)
    return strings_match(a, b)


def first_number(text: str) -> float | None:
    found = _FIRST_NUMBER.search(text.replace(",", "").replace("$", ""))
    return float(found.group(1)) if found else None


def numbers_match(x: float, y: float) -> bool:
    if x == y:
        return True
    if x < 1 and y < 1:
        return math.isclose(x, y, rel_tol=_TOLERANCE, abs_tol=_TOLERANCE)
    places = min(_decimals(x), _decimals(y))  # Round both to the coarser precision of the two.
    x, y = round(x, places), round(y, places)
    return x == y or math.isclose(x, y, rel_tol=_TOLERANCE, abs_tol=_TOLERANCE)


def _decimals(x: float) -> int:
    """Decimals as the official scorer counts them: from the float's repr ("1e-05" counts 0)."""
    text = str(x)
    return len(text.split(".")[-1]) if "." in text else 0


def lists_match(a: str, b: str) -> bool:
    """Order never matters; equal length lists are compared item by item with `match`."""
    left, right = _items(a), _items(b)
    if left == right:
        return True
    if len(left) != len(right):
        return False
    return all(match(x, y) for x, y in zip(left, right))


def _items(text: str) -> list[str]:
    text = re.sub(r"^\[|\]$", "", text.strip())
    return sorted(item.strip() for item in re.split(r"[,;]", text) if item.strip())


def strings_match(a: str, b: str) -> bool:
    """Non-word characters (spaces too) are dropped, so "one word" is always the case that decides."""
    a, b = re.sub(r"\W", "", a), re.sub(r"\W", "", b)
    if a == b:
        return True
    if len(a.split()) == 1 or len(b.split()) == 1:
        left, right = set(a.split()), set(b.split())
        return left <= right or right <= left
    return SequenceMatcher(None, a, b).ratio() > 0.95
