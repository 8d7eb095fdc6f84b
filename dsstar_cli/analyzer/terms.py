"""Words of a question, a file name or a description, reduced to comparable terms: lower case,
snake_case and camelCase split, stop words dropped, and each word stemmed (Snowball's English
stemmer), so "reported identity thefts" meets "Identity_Theft_Reports"."""

from __future__ import annotations

import re
import threading
from functools import lru_cache

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_STOP = frozenset("a an and are as at be by for from had has have how in is it of on or the this to was "
                  "were what when where which who with per each all than that".split())


_local = threading.local()


def _stemmer():
    """This thread's stemmer: a Snowball stemmer keeps the word it works on in itself, so one shared
    by batch mode's threads mixes their words up (IndexError). Imported on first use, not before
    the header (snowballstemmer loads every language's stemmer, ~25 ms)."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        import snowballstemmer

        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    return stemmer


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return word if word.isdigit() else _stemmer().stemWord(word)


def terms(text: str) -> list[str]:
    text = _CAMEL.sub(" ", text).replace("_", " ").lower()
    return [_stem(w) for w in _WORD.findall(text) if w not in _STOP and len(w) > 1]
