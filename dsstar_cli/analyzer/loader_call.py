"""The load call a table's description gives (`pd.read_csv(path, sep=';', skiprows=2)`), read back
and run: what reads a file exactly as the model is told to read it, for the passes that compare
files after profiling (a dataset's members, duplicate tables) without profiling them again."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

FOOTNOTES_WHOLE_BYTES = 16 * 1024 * 1024
CALL = re.compile(r"pd\.(read_csv|read_excel|read_parquet|read_feather)\(path(?:, [^\n]*?)?\)(?=\.?\s|\.?$)")


@dataclass
class Loader:
    reader: str                          # "read_csv", "read_excel", "read_parquet" or "read_feather"
    options: dict = field(default_factory=dict)


def loader_of(description: str) -> Loader | None:
    """The description's one load call; None when it gives none, or several (a workbook of many
    sheets, stacked blocks): which table is meant is then not clear."""
    found = list(CALL.finditer(description))
    if len(found) != 1:
        return None
    try:
        call = ast.parse(found[0].group(0), mode="eval").body
        return Loader(found[0].group(1), {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg})
    except (SyntaxError, ValueError):
        return None


def read(path: Path, loader: Loader, nrows: int | None = None, as_text: bool = False) -> "pd.DataFrame":
    """The table as the loader reads it; its first `nrows` rows when given (with footnote rows below
    the table, pandas cannot combine skipfooter with nrows: a small file is then read whole and cut,
    a big one read without skipfooter, its notes being far below the rows read);
    every cell as text with `as_text` (delimited text only). Run in a bounded child: pandas is
    imported here, not in dsstar's own process."""
    import pandas as pd

    options = dict(loader.options)
    if loader.reader == "read_parquet":
        frame = pd.read_parquet(path)
        return frame if nrows is None else frame.head(nrows)
    if loader.reader == "read_feather":
        frame = pd.read_feather(path)
        return frame if nrows is None else frame.head(nrows)
    if nrows is not None and "skipfooter" in options and path.stat().st_size <= FOOTNOTES_WHOLE_BYTES:
        return read(path, loader, None, as_text).head(nrows)  # Footnote rows out: read whole, then cut.
    if nrows is not None:
        if options.pop("skipfooter", None) is not None and options.get("engine") == "python":
            options.pop("engine")
        options["nrows"] = nrows
    if as_text and loader.reader == "read_csv":
        options["dtype"] = str
    if loader.reader == "read_excel":
        options.setdefault("engine", "openpyxl")
    return getattr(pd, loader.reader)(path, **options)
