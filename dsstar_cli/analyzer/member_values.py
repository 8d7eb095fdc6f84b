"""A dataset's few-valued text columns counted across ALL its members, not its first alone.

A dataset (datasets.py) is profiled from one member in full; its other members may spell the same
value differently. Lab: 'Violation' showed 'no' (622), 'yes' (28) from the first file while later
files held 'No', 'NO', 'Yes' and 'YES'; a script matching 'yes' counted none of them. Here the
first rows of every member (SAMPLE_ROWS at most, fewer when there are many members, and within a
share of the time bound) are read as text with the member's own load call, and each few-valued
text column gets the union of its values with counts, a note when spellings differ only in case
or punctuation, and which members hold which spelling when that is short to say.

Runs in the dataset's bounded child (bounded.py): only counts of at most TRACKED spellings per
column are kept, never the rows.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dsstar_cli.analyzer.frame import ALL_VALUES_UP_TO
from dsstar_cli.analyzer.loader_call import Loader, read

SAMPLE_ROWS = 20_000      # Rows read from one member at most,
TOTAL_ROWS = 400_000      # and from all members together (each gets its share, MIN_ROWS at least).
MIN_ROWS = 200
CELLS = 4_000_000         # Cells read from one member at most (a wide table gets fewer rows).
TRACKED = 4 * ALL_VALUES_UP_TO  # Spellings counted per column; past this it is not few-valued.
SHOWN_COLUMNS = 8         # Columns whose spellings differ first.
VALUES_CHARS = 300        # A column's values with counts, cut past this.
SHOWN_MEMBERS = 3         # Members named as holding a spelling; more are counted.
HOLDERS_CHARS = 300       # "Which members hold which" is left out past this.
SELF_DESCRIBING = {".jsonl", ".ndjson", ".parquet", ".pq", ".feather", ".arrow"}  # Read without a load call.
NUMBER = re.compile(r"^\s*[-+]?[\d,.]+([eE][-+]?\d+)?%?\s*$")


def _key(value: str) -> str:
    """What two spellings of one value share: case, spaces and punctuation aside."""
    key = re.sub(r"[\W_]+", "", value.casefold())
    return key or value.strip().casefold()


@dataclass
class Column:
    counts: Counter = field(default_factory=Counter)
    holders: dict = field(default_factory=dict)   # spelling -> indices of the members holding it
    dropped: bool = False                          # too many values: not few-valued


def _text_columns(frame: pd.DataFrame) -> list:
    return [name for name in frame.columns
            if not pd.api.types.is_numeric_dtype(frame[name]) and not pd.api.types.is_bool_dtype(frame[name])
            and not pd.api.types.is_datetime64_any_dtype(frame[name])]


def _read_member(path: Path, loader: Loader | None, share: int) -> tuple[pd.DataFrame, int]:
    """(the member's first rows, as text where the format allows, the number of rows wanted):
    `share` rows, fewer for a wide table (CELLS), one more to tell whether the member was read whole."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return pd.read_json(path, lines=True, nrows=share + 1, dtype=False), share
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(path)
        batch = next(parquet.iter_batches(batch_size=share + 1), None)
        return (batch.to_pandas() if batch is not None else parquet.schema_arrow.empty_table().to_pandas()), share
    if suffix in (".feather", ".arrow"):
        import pyarrow as pa
        import pyarrow.ipc as ipc

        reader, batches, rows = ipc.open_file(pa.memory_map(str(path), "r")), [], 0
        for i in range(reader.num_record_batches):
            if rows > share:
                break
            batches.append(reader.get_batch(i))
            rows += batches[-1].num_rows
        return pa.Table.from_batches(batches, reader.schema).slice(0, share + 1).to_pandas(), share
    width = len(read(path, loader, 0, as_text=True).columns) or 1
    rows = max(1, min(share, CELLS // width))
    return read(path, loader, rows + 1, as_text=True).head(rows + 1), rows


def _count(columns: dict[str, Column], frame: pd.DataFrame, member: int) -> int:
    for name in _text_columns(frame):
        column = columns.setdefault(str(name), Column())
        if column.dropped:
            continue
        try:
            counts = frame[name].dropna().astype(str).value_counts()
        except TypeError:  # Unhashable cells (lists from JSON).
            column.dropped = True
            continue
        for value, n in counts.items():
            column.counts[value] += int(n)
            column.holders.setdefault(value, set()).add(member)
        if len(column.counts) > TRACKED:
            column.dropped, column.counts, column.holders = True, Counter(), {}
    return len(frame)


def _holders(spellings: list[str], column: Column, names: list[str]) -> str:
    """'No', 'Yes' in b.csv; 'NO' in 3 members — or "" when that is long to say."""
    by_members: dict[str, list[str]] = {}
    everywhere = set().union(*(column.holders[s] for s in spellings))
    for spelling in spellings:
        held = sorted(column.holders[spelling])
        if set(held) == everywhere:
            where = "every member"
        elif len(held) <= SHOWN_MEMBERS:
            where = ", ".join(names[i] for i in held)
        else:
            where = f"{len(held):,} members"
        by_members.setdefault(where, []).append(repr(spelling))
    text = "; ".join(f"{', '.join(values)} in {where}" for where, values in by_members.items())
    return f" ({text})" if len(text) <= HOLDERS_CHARS else ""


def _column_line(name: str, column: Column, names: list[str]) -> str | None:
    """The column's union of values, or None when it is not a few-valued text column."""
    groups: dict[str, list[str]] = {}
    for value, _ in column.counts.most_common():
        groups.setdefault(_key(value), []).append(value)
    if column.dropped or not groups or len(groups) > ALL_VALUES_UP_TO or all(NUMBER.match(v) for v in column.counts):
        return None
    shown = ", ".join(f"{v!r} ({n:,})" for v, n in column.counts.most_common())
    shown = shown if len(shown) <= VALUES_CHARS else shown[:VALUES_CHARS].rsplit(", ", 1)[0] + ", ..."
    line = f"- {name}: {shown}"
    variants = [spellings for spellings in groups.values() if len(spellings) > 1]
    if variants:
        case_only = all(len({s.casefold() for s in spellings}) == 1 for spellings in variants)
        held = set().union(*(column.holders[s] for spellings in variants for s in spellings))
        where = " across members" if any(column.holders[s] != held for sp in variants for s in sp) else ""
        how = "case" if case_only else "case or spelling"
        fix = "compare case-insensitively" if case_only else "normalise case, spaces and punctuation before comparing"
        said = ", ".join(" / ".join(repr(s) for s in spellings) for spellings in variants)
        line += f"; values differ in {how}{where}: {said} — {fix}"
        line += _holders([s for spellings in variants for s in spellings], column, names)
    return line + "."


def across_members(root: Path, members: list[str], names: list[str], loader: Loader | None,
                   seconds: float) -> str:
    """Lines on the few-valued text columns across `members` (relative paths; `names` as the
    description shows them), read with the first member's `loader`; "" when there are none."""
    if loader is None and Path(members[0]).suffix.lower() not in SELF_DESCRIBING:
        return ""  # No single load call to read delimited members with: nothing rather than a guess.
    started, columns, read_rows, read_members, whole = time.monotonic(), {}, 0, 0, True
    share = max(MIN_ROWS, min(SAMPLE_ROWS, TOTAL_ROWS // max(len(members), 1)))
    for index, member in enumerate(members):
        if time.monotonic() - started > seconds:
            break
        try:
            frame, rows = _read_member(root / member, loader, share)
        except Exception:  # A member that cannot be read is named elsewhere in the description.
            continue
        whole = whole and len(frame) <= rows
        read_rows += _count(columns, frame.head(rows), index)
        read_members += 1
    lines = [line for name, column in columns.items() if (line := _column_line(name, column, names))]
    lines.sort(key=lambda line: "; values differ in" not in line)  # Stable: table order otherwise.
    if not lines:
        return ""
    how = "every row of each" if whole else f"the first {share:,} rows of each at most"
    of = f"all {len(members):,} members" if read_members == len(members) else \
        f"{read_members:,} of the {len(members):,} members (time bound)"
    more = f"\n- ... and {len(lines) - SHOWN_COLUMNS} more" if len(lines) > SHOWN_COLUMNS else ""
    return (f"Few-valued text columns across {of} ({how} read: {read_rows:,} rows):\n"
            + "\n".join(lines[:SHOWN_COLUMNS]) + more)
