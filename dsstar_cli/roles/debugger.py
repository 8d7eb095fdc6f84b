"""Debugger: summarise the traceback (deterministically: no model call), then ask for a repair."""

import re

from dsstar_cli.model import Messages
from dsstar_cli.quoting import quote
from dsstar_cli.roles import keep_evidence, libraries, render
from dsstar_cli.roles.context import RunContext
from dsstar_cli.roles.parsing import extract_code

ROLE = "debugger"
parse = extract_code
MAX_ERROR_LINES = 30
# Frames from the interpreter's and libraries' own files say little about the script's mistake.
NOISE = re.compile(r'File "[^"]*(site-packages|/lib/python3|runpy\.py|sandbox/worker\.py|<frozen)')


def summarize_error(error: str) -> str:
    """The script's own frames and the exception, without library internals."""
    lines = error.rstrip().splitlines()
    kept: list[str] = []
    skip_source = False
    for line in lines:
        if line.lstrip().startswith("File "):
            skip_source = bool(NOISE.search(line))
            if skip_source:
                continue
        elif skip_source and line.startswith("    "):
            continue
        else:
            skip_source = False
        kept.append(line)
    if len(kept) > MAX_ERROR_LINES:
        kept = kept[:5] + ["    ..."] + kept[-(MAX_ERROR_LINES - 6):]
    return "\n".join(kept) or "(no error output)"


# Running out of memory, as Python, numpy/pandas, the C library and DuckDB each say it.
OUT_OF_MEMORY = re.compile(r"MemoryError|Unable to allocate|Cannot allocate memory|std::bad_alloc|Out of Memory Error")
MEMORY_HINT = ("\n\nThis is the memory cap: the data does not fit in pandas here. Do not load whole files; "
               "query them in place with DuckDB (set up for the sandbox; it spills to disk) and bring only small "
               "results into pandas: duckdb.sql(f\"SELECT ... FROM read_csv('{DATA_DIR}/file.csv') "
               "GROUP BY ...\").df(). With DuckDB already, select fewer columns, or SET preserve_insertion_order=false.")
MAX_PRINTED_CHARS = 3000


def messages(context: RunContext, code: str, error: str, printed: str = "") -> Messages:
    """`printed`: the script's stdout before it failed (how far it got, and what it saw)."""
    shown = keep_evidence(printed.strip(), MAX_PRINTED_CHARS) if printed.strip() else "(nothing)"
    shown = quote(shown, "output of the script before it failed")  # Both print cells of the data.
    summary = quote(summarize_error(error), "error output of the script")
    if OUT_OF_MEMORY.search(error):  # Steer to the engine that fits, not to a smaller sample.
        summary += MEMORY_HINT
    return render(ROLE, "repair", context.full, code=code.rstrip(), error=summary, printed=shown,
                  libraries=libraries())
