"""Fit a description to its size cap by what matters most, not by position.

A workbook of seven sheets, or a table of 179 columns, does not fit a few thousand characters.
Cutting the text at the cap kept the first sheet's sample rows and lost the last sheets whole,
names of columns included. A profiler instead gives its description as parts, each with a rank:

  STRUCTURE (0)  what a script needs to find and load the data: sheets, tables, load calls,
                 every column name. Never dropped (up to STRUCTURE_FACTOR times the cap).
  DETAIL (1)     per-column statistics. Dropped from the last table backwards, each replaced by
                 its short form (the column names) when it has one; a third of the cap stays
                 for them even when the structure alone outgrows the cap.
  SAMPLE (2)     example rows. Dropped first, from the last table backwards.

The description says what was left out, so the model knows to look.
"""

from __future__ import annotations

from dataclasses import dataclass

STRUCTURE, DETAIL, SAMPLE = 0, 1, 2
STRUCTURE_FACTOR = 2  # Structure alone may take up to twice the cap before it is cut too.
DETAIL_SHARE = 3      # Structure past the cap still leaves a third of the cap for details.


class Fitted(str):
    """A description already fitted by rank: only the hard bound (STRUCTURE_FACTOR x cap) applies."""


@dataclass
class Part:
    text: str
    rank: int = STRUCTURE
    short: str | None = None  # Said instead when the part is dropped (a DETAIL's column names).


def fit(parts: list[Part], limit: int) -> Fitted:
    """The parts joined by lines, within `limit` characters if dropping samples, then details
    (from the end) gets there; structure is kept up to STRUCTURE_FACTOR x `limit`, and structure
    past the cap still leaves room for a little detail (limit // DETAIL_SHARE)."""
    kept: list[Part | None] = list(parts)
    dropped = {DETAIL: 0, SAMPLE: 0}

    def size() -> int:
        return sum(len(p.text) + 1 for p in kept if p is not None)

    structure = sum(len(p.text) + 1 for p in parts if p.rank == STRUCTURE)
    room = min(max(limit, structure + limit // DETAIL_SHARE), STRUCTURE_FACTOR * limit)
    for rank in (SAMPLE, DETAIL):
        for i in reversed(range(len(kept))):
            if size() <= room:
                break
            part = kept[i]
            if part is not None and part.rank == rank:
                kept[i] = Part(part.short) if part.short else None
                dropped[rank] += 1
    text = "\n".join(p.text for p in kept if p is not None)
    left_out = ([f"column statistics ({dropped[DETAIL]} of {sum(p.rank == DETAIL for p in parts)} parts)"]
                if dropped[DETAIL] else [])
    left_out += [f"sample rows of {n} table{'s' if n > 1 else ''}" for n in [dropped[SAMPLE]] if n]
    if left_out:
        text += f"\n[left out to fit the size cap: {', '.join(left_out)}; print them from a script if needed]"
    return Fitted(text)
