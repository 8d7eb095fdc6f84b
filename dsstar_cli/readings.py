"""The reading behind an answer: the interpretive choices the plan made (assumptions: what a term
was taken to mean, a data convention, a filter, a denominator, which of two files) and the other
plausible readings whose answers differ (alternatives), each with the answer a script computed for it.

The finalizer names them; this module keeps only what the scripts' output backs. An alternative whose
answer no script printed is a guess and is dropped, as is one whose answer is the answer itself (a
reading that changes nothing is noise). A script may also print them itself, one per line:

    ASSUMPTION: an empty list applies to every value, as null does
    ALTERNATIVE: empty lists match nothing => 0.52

which is what `from_output` reads when the finalizer named none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_ITEMS = 5          # A list of every conceivable doubt is noise: the few that change the answer.
MAX_TEXT = 300
ARROW = re.compile(r"\s*(?:=>|->|→)\s*")
PRINTED_LINE = re.compile(r"^\s*(ASSUMPTION|ALTERNATIVE)\s*[:=]\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
PLAIN_NUMBER = re.compile(r"^[-+]?[$€£]?\s*-?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?\s*%?$")


@dataclass(frozen=True)
class Alternative:
    reading: str   # the other reading, in a phrase
    answer: str    # what a script printed for it

    def as_dict(self) -> dict[str, str]:
        return {"reading": self.reading, "answer": self.answer}


@dataclass(frozen=True)
class Reading:
    assumptions: tuple[str, ...] = ()
    alternatives: tuple[Alternative, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.assumptions or self.alternatives)


def parse(text: str) -> Reading:
    """Lines "assumption: ..." and "alternative: <reading> => <answer>" (a list marker before
    either is fine); anything else is ignored."""
    assumptions: list[str] = []
    alternatives: list[Alternative] = []
    for line in text.splitlines():
        kind, _, rest = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).partition(":")
        kind, rest = kind.strip().lower(), _one_line(rest)
        if not rest:
            continue
        if kind in ("assumption", "assumed"):
            assumptions.append(rest)
        elif kind in ("alternative", "alternative reading"):
            reading, answer = _split(rest)
            if reading and answer:
                alternatives.append(Alternative(reading, answer))
    return Reading(tuple(assumptions[:MAX_ITEMS]), tuple(alternatives[:MAX_ITEMS]))


def from_output(output: str) -> Reading:
    """The ASSUMPTION: and ALTERNATIVE: lines a script printed itself."""
    lines = [f"{kind.lower()}: {rest}" for kind, rest in PRINTED_LINE.findall(output)]
    return parse("\n".join(lines))


def behind(named: Reading, answer: str | None, output: str) -> Reading:
    """The reading behind an answer: what the finalizer named (else what the script printed as
    ASSUMPTION/ALTERNATIVE lines), backed by the scripts' output."""
    return backed(named if named else from_output(output), answer, output)


def backed(reading: Reading, answer: str | None, output: str) -> Reading:
    """The reading with only the alternatives a script printed and whose answers differ from `answer`."""
    kept = [alt for alt in reading.alternatives
            if printed(alt.answer, output) and (answer is None or not same_answer(alt.answer, answer))]
    unique = list({(alt.reading.lower(), alt.answer): alt for alt in kept}.values())
    return Reading(reading.assumptions, tuple(unique))


def printed(value: str, output: str) -> bool:
    """Whether a script's output shows `value`: for a number, a printed number that rounds to it;
    else the text itself as whole words (case and spacing aside); for a list, every item."""
    value = value.strip()
    if not value:
        return False
    number = _number(value)
    if number is not None:
        places = _places(value)
        return any(round(found, places) == round(number, places) for found in _numbers(output))
    flat = " ".join(output.split()).lower()
    if re.search(rf"(?<!\w){re.escape(' '.join(value.split()).lower())}(?!\w)", flat):
        return True
    items = [item.strip() for item in re.split(r"[,;\n]", value) if item.strip()]
    return len(items) > 1 and all(printed(item, output) for item in items)


def same_answer(a: str, b: str) -> bool:
    """The same answer up to case, spacing, a bracketed remark ("Delaware (share 0.96)", "No []")
    and, for numbers, the coarser of the two precisions; a number is also the same as a printed
    line that holds it as its only number ("same sample, age 60.0"); a list is the same as another
    list of the same items, in any order and notation ("['A', 'B']" and "B, A")."""
    core_a, core_b = _core(a), _core(b)
    if core_a == core_b:
        return True
    items_a, items_b = _items(a), _items(b)
    if len(items_a) > 1 and sorted(items_a) == sorted(items_b):
        return True
    x, y = _number(core_a), _number(core_b)
    if x is None and y is None:
        return False
    if x is None or y is None:  # One side a number, the other a line: its only number, if it has one.
        number, text = (y, core_a) if x is None else (x, core_b)
        found = _numbers(text)
        if len(found) != 1:
            return False
        places = min(_places(a if x is not None else b), _places(str(found[0])))
        return round(found[0], places) == round(number, places)
    places = min(_places(a), _places(b))
    return round(x, places) == round(y, places)


def _core(text: str) -> str:
    """An answer without bracketed remarks, case and extra spacing."""
    text = re.sub(r"\([^()]*\)|\[[^\[\]]*\]", " ", text)
    return " ".join(text.split()).strip(" .,;:").lower()


def _items(text: str) -> list[str]:
    """The items of a list answer, however written: brackets and quotes dropped, split at , and ;."""
    text = text.strip().strip("[](){}")
    return [" ".join(item.split()).strip("'\"` ").lower() for item in re.split(r"[,;]", text) if item.strip()]


def _number(text: str) -> float | None:
    """The number a short answer is ("1,937,041", "$2,065.10", "52.3%"), else None."""
    text = text.strip()
    if not PLAIN_NUMBER.match(text) or not re.search(r"\d", text):
        return None
    try:
        return float(re.sub(r"[^\d.\-]", "", text))
    except ValueError:
        return None


def _places(text: str) -> int:
    digits = re.sub(r"[^\d.]", "", text)
    return len(digits.split(".", 1)[1]) if "." in digits else 0


def _numbers(output: str) -> list[float]:
    found = []
    for token in NUMBER.findall(output):
        try:
            found.append(float(token.replace(",", "")))
        except ValueError:
            continue
    return found


def _split(text: str) -> tuple[str, str]:
    """"<reading> => <answer>": the last arrow splits (a reading may hold one)."""
    parts = ARROW.split(text)
    if len(parts) < 2:
        return text, ""
    return " ".join(parts[:-1]).strip(), parts[-1].strip().strip("`")


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT].rsplit(" ", 1)[0] + " [...]"

