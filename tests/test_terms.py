"""The retriever's terms: stemmed words, the same from any thread (batch mode ranks files for
several questions at once)."""

from __future__ import annotations

import random
import string
import threading

from dsstar_cli.analyzer.terms import terms


def test_words_are_split_and_stemmed():
    assert set(terms("reported identity thefts")) == set(terms("Identity_Theft_Reports"))
    assert "the" not in terms("the fraud rate")


def test_threads_stemming_at_once_get_what_one_thread_gets():
    """Words no cache has seen, stemmed from 4 threads at once: a stemmer shared between threads
    mixes their words up (IndexError, or another word's stem)."""
    rng = random.Random(7)
    suffixes = ["ational", "ization", "fulness", "iveness", "ements", "ingly", "ations", "ously", "ness"]
    words = [["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 12))) + rng.choice(suffixes)
              for _ in range(6000)] for _ in range(4)]
    texts = [" ".join(chunk) for chunk in words]
    found: list = [None] * 4
    errors: list[BaseException] = []

    def stem(index: int) -> None:
        try:
            found[index] = [terms(word) for word in words[index]]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=stem, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]
    for index, text in enumerate(texts):  # Now from this thread alone (cached or not, the same stems).
        assert [stem for result in found[index] for stem in result] == terms(text)
