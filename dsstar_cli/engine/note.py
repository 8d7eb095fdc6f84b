"""What the planner, coder, debugger and router are told about querying: one idiom, `dsstar.sql`,
and the tables it knows on this engine. It goes into the shared context after the data files."""

from __future__ import annotations

HEADING = "# Querying the data: dsstar.sql"
# Locally the coder already has pandas and duckdb (its prompt says so): the note, with its listing of
# every table, goes into the prompts only where a table is this big, so SQL run in place pays. (Every
# prompt of an ordinary folder stays as the accuracy lab measured it.)
LOCAL_NOTE_BYTES = 256 << 20


def caps(setup: dict) -> str:
    return (f"at most {setup['max_rows']:,} rows and {setup['max_bytes'] // (1024 * 1024)} MB per call, past which "
            "it raises: aggregate in SQL")


def prompt_note(setup: dict) -> str:
    """'' when there is no table to query (DuckDB over a folder of documents and spreadsheets)."""
    described = setup.get("described", {})
    if not described:
        return ""
    listing = "\n".join(f"- {name}: {what}" for name, what in described.items())
    idiom = ('import dsstar\ndf = dsstar.sql("SELECT <column>, COUNT(*) AS n FROM <table> GROUP BY 1")  '
             "# a pandas DataFrame")
    if setup["kind"] == "spark":
        return (f"{HEADING}\nThe data lives on a Spark cluster: scripts cannot open these paths, nor reach any "
                "network. Query the tables below only through dsstar.sql, one read-only statement a call (SELECT, "
                "WITH, SHOW, DESCRIBE) in DuckDB's SQL dialect (dsstar translates it to Spark SQL); it returns a "
                f"pandas DataFrame of {caps(setup)}. Let the cluster do the work: filter, join and GROUP BY in SQL, "
                f"and bring back only small results.\n{idiom}\nTables:\n{listing}")
    return (f"{HEADING}\nBesides pandas, scripts may query these tables with dsstar.sql: one read-only statement "
            "a call (SELECT, WITH, SHOW, DESCRIBE) in DuckDB's SQL, run in place over the files (good for big "
            f"files: filter and GROUP BY in SQL); it returns a pandas DataFrame of {caps(setup)}.\n{idiom}\n"
            f"Tables:\n{listing}")


def local_note(setup: dict, files: list) -> str:
    """DuckDB over a local folder: the note when the biggest file is LOCAL_NOTE_BYTES or more, else ''."""
    if max((f.size_bytes for f in files), default=0) < LOCAL_NOTE_BYTES:
        return ""
    return prompt_note(setup)
