"""An answer that is a table: recognised in the answer's text (CSV or TSV with a header row, as the
finalizer is asked to print one, or a Markdown pipe table, as models like to write one), so that a
terminal shows it as a table, the run keeps it as a CSV file and --json gives its rows and columns.

Only a shape that cannot be mistaken is taken: two lines at least (a header and a row), two
columns at least, every row as wide as the header. Anything else stays a plain answer. Cells are
kept as the text printed (no number parsing: the answer's own digits are the answer)."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

MAX_ROWS = 100_000  # A longer "table" is kept as text only (its CSV would be the answer again).
SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")


@dataclass(frozen=True)
class AnswerTable:
    columns: list[str]
    rows: list[list[str]]

    def as_dict(self) -> dict:
        return {"columns": self.columns, "rows": self.rows}

    def to_csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.columns)
        writer.writerows(self.rows)
        return out.getvalue()


def parse(answer: str | None) -> AnswerTable | None:
    """The table `answer` holds, or None when it is not one."""
    lines = [line.strip() for line in (answer or "").strip().splitlines() if line.strip()]
    if len(lines) < 2 or len(lines) > MAX_ROWS + 2:
        return None
    if len(lines) >= 3 and SEPARATOR.match(lines[1]) and lines[0].count("|") >= 1:
        return _shaped([_pipe_cells(line) for line in lines[:1] + lines[2:]])
    delimiter = "\t" if all("\t" in line for line in lines) else ","
    try:
        return _shaped([[cell.strip() for cell in row] for row in csv.reader(lines, delimiter=delimiter)])
    except csv.Error:
        return None


def _pipe_cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _shaped(rows: list[list[str]]) -> AnswerTable | None:
    header, body = rows[0], rows[1:]
    if len(header) < 2 or not body or any(len(row) != len(header) for row in body) or not all(header):
        return None
    return AnswerTable(header, body)
