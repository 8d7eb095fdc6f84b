"""HTML pages: title, an outline of headings (with line numbers), and every table with its
caption, header cells, row count and first rows, so the coder knows where the data is."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pandas as pd

from dsstar_cli.analyzer.budget import SAMPLE, Fitted, Part, fit
from dsstar_cli.analyzer.limits import AnalyzerLimits, read_text_head

MAX_BYTES = 20 * 1024 * 1024
MAX_HEADINGS = 30
MAX_TABLES = 15


class _Outline(HTMLParser):
    """Collects headings and tables in one pass; cells are plain text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.title = ""
        self.headings: list[tuple[int, str, str]] = []   # line, tag, text
        self.tables: list[dict] = []
        self._text: list[str] | None = None
        self._capture_for: str | None = None
        self._stack: list[dict] = []                     # open tables (they nest)
        self._row: list[str] | None = None
        self._line = 0
        self._row_is_header = False

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in ("title", "h1", "h2", "h3", "h4", "h5", "h6", "caption", "td", "th"):
            self._text, self._capture_for, self._line = [], tag, self.getpos()[0]
        if tag == "table":
            self._stack.append({"line": self.getpos()[0], "start": self.getpos(), "caption": "", "rows": [],
                                "header": []})
        elif tag == "tr" and self._stack:
            self._row = []

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == self._capture_for and self._text is not None:
            text = " ".join("".join(self._text).split())
            self._finish(tag, text)
            self._text = self._capture_for = None
        if tag == "tr" and self._stack and self._row is not None:
            self._add_row(self._stack[-1])
        elif tag == "table" and self._stack:
            self.tables.append(self._stack.pop())
            self.tables.sort(key=lambda t: t["start"])  # Document order, as pd.read_html lists them.

    def _add_row(self, table: dict) -> None:
        """A first row that starts with <th> is the header; every other row is data."""
        if not table["header"] and not table["rows"] and self._row_is_header:
            table["header"] = self._row
        elif self._row:
            table["rows"].append(self._row)
        self._row, self._row_is_header = None, False

    def _finish(self, tag: str, text: str) -> None:
        if tag == "title":
            self.title = text
        elif tag.startswith("h") and len(tag) == 2:
            self.headings.append((self._line, tag, text))
        elif tag == "caption" and self._stack:
            self._stack[-1]["caption"] = text
        elif tag in ("td", "th") and self._row is not None:
            self._row.append(text)
            if tag == "th" and len(self._row) == 1:
                self._row_is_header = True


def _read_html(path: Path) -> list[pd.DataFrame] | None:
    """The tables exactly as the coder's `pd.read_html(path)` will see them (the same call, so the
    same encoding detection); None when pandas cannot parse the page (then the tables are shown
    as the HTML has them)."""
    try:
        return pd.read_html(path)
    except ValueError:  # "No tables found"
        return []
    except Exception:  # noqa: BLE001 - lxml's errors on broken markup; the outline still stands
        return None


def _cells(values) -> str:
    return repr([_short(v) for v in values][:12])[:300]


def _short(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value[:60] if isinstance(value, str) else value


def profile_html(path: Path, limits: AnalyzerLimits) -> Fitted:
    raw, size = read_text_head(path, MAX_BYTES, "HTML")
    text = raw.decode("utf-8", errors="replace")
    outline = _Outline()
    outline.feed(text)
    outline.close()
    frames = _read_html(path) if len(raw) == size else None
    read = "" if len(raw) == size else f" (first {len(raw):,} bytes read)"
    count = len(frames) if frames is not None else len(outline.tables)
    parts = [Part(f"HTML page{read}, {size:,} bytes" + (f", title {outline.title!r}" if outline.title else "") +
                  f"; {count} table(s). Table k loads with pd.read_html(path)[k] (match=... picks one by its text).")]
    if outline.headings:
        parts.append(Part(f"Headings ({len(outline.headings)}):\n" + "\n".join(
            f"  line {line}: {tag} {text[:120]}" for line, tag, text in outline.headings[:MAX_HEADINGS])))
    located = frames is None or len(frames) == len(outline.tables)  # Line numbers and captions line up.
    for number in range(min(count, MAX_TABLES)):
        table = outline.tables[number] if located else None
        where = f" (line {table['line']})" if table else ""
        caption = f" caption {table['caption']!r}," if table and table["caption"] else ""
        if frames is not None:
            frame = frames[number]
            parts.append(Part(f"Table {number} = pd.read_html(path)[{number}]{where},{caption} {len(frame):,} rows x "
                              f"{len(frame.columns)} columns; {_columns(frame.columns)}"))
            parts.append(Part("\n".join(f"  {_cells(row)}" for row in frame.head(limits.sample_rows).itertuples(
                index=False)), SAMPLE))
        else:
            header = table["header"] or (table["rows"][0] if table["rows"] else [])
            parts.append(Part(f"Table {number} = pd.read_html(path)[{number}]{where},{caption} {len(table['rows']):,} "
                              f"rows x {max((len(r) for r in table['rows']), default=len(header))} columns; "
                              "header cells: " + ", ".join(repr(h[:60]) for h in header[:30])))
            parts.append(Part("\n".join(f"  {row[:12]!r}"[:300] for row in table["rows"][:limits.sample_rows]), SAMPLE))
    if count > MAX_TABLES:
        parts.append(Part(f"... and {count - MAX_TABLES} more tables."))
    return fit([part for part in parts if part.text], limits.max_description_chars)


def _columns(columns) -> str:
    """A table's column names; a header of several rows whose top row is one title (a navigation
    box's) says that title once instead of in every column's tuple."""
    names = list(columns)
    if names and all(isinstance(c, tuple) for c in names):
        tops = {c[0] for c in names}
        if len(tops) == 1:
            top = next(iter(tops))
            inner = [c[1:] if len(c) > 2 else c[1] for c in names]
            return (f"header of {len(names[0])} rows, the top one {_short(top)!r} over every column; columns (the "
                    "tuples pandas gives): (top, " + "), (top, ".join(repr(_short(c)) for c in inner[:30]) + ")")
        return "columns: " + ", ".join(repr(tuple(map(_short, c))) for c in names[:30])
    return "columns: " + ", ".join(repr(_short(c)) for c in names[:30])
