"""The Spark engine: dsstar's own Spark Connect session, the only one a run holds.

It connects (with the token read from its variable at that moment, never kept in a log or a
file), lists and registers the datasets under DATA_DIR as temporary views (session-scoped: the
catalog is not written), and answers queries for the query channel (sandbox/query_server.py):
each statement checked read-only and turned into Spark SQL (readonly_sql.py), run under a tag so
that the script's deadline or Ctrl-C interrupts it on the cluster (`interrupt`, interruptTag).
pyspark is an optional extra (`pip install -e '.[spark]'`), imported only here.
"""

from __future__ import annotations

import threading

from dsstar_cli.engine import INSTALL_SPARK, EngineSettings
from dsstar_cli.errors import SetupError
from dsstar_cli.sandbox.query_server import first_lines
from dsstar_cli.sandbox.readonly_sql import to_spark

CONNECT_TIMEOUT_S = 30.0
MAX_LISTED = 100_000  # Files listed under DATA_DIR; past it the listing says so.


def _pyspark():
    try:
        import warnings

        warnings.filterwarnings("ignore", message=".*pandas >= 3.0.0.*")  # pyspark's, about pandas 3.
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise SetupError(f"engine: spark needs pyspark's Spark Connect client: {INSTALL_SPARK} ({exc})") from exc
    return SparkSession


def within(seconds: float, action, what: str):
    """`action()`'s value, or a SetupError when it takes longer than `seconds` (the Spark Connect
    client retries an address that does not answer for minutes)."""
    box: dict = {}

    def run():
        try:
            box["value"] = action()
        except BaseException as exc:  # noqa: B036 - handed to the caller's thread.
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name="dsstar-spark-connect")
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise SetupError(f"{what}: no answer within {seconds:.0f} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def reachable(remote: str, what: str, timeout_s: float = 5.0) -> None:
    """A TCP connection to the address's host and port (15002 when it names none), or a SetupError at
    once: the Spark Connect client would retry a closed port for a long time before saying so."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(remote.replace("sc://", "http://", 1).split("/;", 1)[0])
    try:
        with socket.create_connection((parts.hostname or "localhost", parts.port or 15002), timeout=timeout_s):
            pass
    except OSError as exc:
        raise SetupError(f"{what}: {exc.strerror or exc}") from None


class SparkEngine:
    """One Spark Connect session; `query` and `interrupt` serve the scripts' query channel."""

    def __init__(self, settings: EngineSettings, session, secret: str | None = None):
        self.settings, self.session, self._secret = settings, session, secret
        self.version = session.version

    @classmethod
    def connect(cls, settings: EngineSettings, timeout_s: float = CONNECT_TIMEOUT_S) -> "SparkEngine":
        """A new session at `settings.remote`; a SetupError in one line when there is none."""
        session_class = _pyspark()
        token = settings.token()
        what = f"cannot reach Spark Connect at {settings.shown_remote()}"
        reachable(settings.remote, what)
        url = settings.remote + ((";" if "/;" in settings.remote else "/;") + f"token={token}" if token else "")

        def start():
            session = session_class.builder.remote(url).create()
            return cls(settings, session, token)

        try:
            return within(timeout_s, start, what)
        except SetupError:
            raise
        except Exception as exc:  # noqa: BLE001 - grpc's and pyspark's errors, said in one line.
            raise SetupError(f"{what}: {cls._clean(str(exc), token)}") from None

    @staticmethod
    def _clean(text: str, secret: str | None) -> str:
        text = first_lines(text, 400).splitlines()[0] if text.strip() else "no reason given"
        return text.replace(secret, "****") if secret else text

    def error_text(self, exc: Exception) -> str:
        return self._clean(str(exc) or type(exc).__name__, self._secret)

    # -- the scripts' queries (sandbox/query_server.py) -------------------------------------------

    def query(self, sql: str, tag: str, max_rows: int):
        """`sql` (DuckDB's dialect, checked read-only) run as Spark SQL under `tag`: a pyarrow Table of
        at most max_rows + 1 rows (one more tells the caller the cap was passed)."""
        text = to_spark(sql)
        self.session.addTag(tag)  # Tags are per thread in the Connect client: this thread's queries.
        try:
            return self.session.sql(text).limit(max_rows + 1).toArrow()
        finally:
            self.session.removeTag(tag)

    def interrupt(self, tag: str) -> None:
        self.session.interruptTag(tag)

    # -- the analyzer's questions (analyzer/engine_describer.py) ---------------------------------

    def list_files(self, location: str) -> list[tuple[str, int, int]]:
        """(path, size, modification time in microseconds) of every file below `location`, as the
        cluster sees it (Spark's file listing, which skips names starting with _ or .); the contents
        are not read."""
        reader = self.session.read.format("binaryFile").option("recursiveFileLookup", "true")
        listed = reader.load(location).selectExpr("path", "length", "unix_micros(modificationTime) AS modified")
        rows = listed.limit(MAX_LISTED).toArrow().to_pylist()
        return [(row["path"], int(row["length"]), int(row["modified"] or 0)) for row in rows]

    def register(self, name: str, location: str, fmt: str) -> None:
        """`location` as the temporary view `name` (partition columns discovered from hive folders)."""
        reader = self.session.read.format({"jsonl": "json", "tsv": "csv"}.get(fmt, fmt))
        if fmt in ("csv", "tsv"):
            reader = reader.option("header", "true").option("inferSchema", "true")
            if fmt == "tsv":
                reader = reader.option("sep", "\t")
        reader.load(location).createOrReplaceTempView(name)

    def sql_arrow(self, sql: str):
        """A statement of dsstar's own (the analyzer's, already Spark SQL) as a pyarrow Table."""
        return self.session.sql(sql).toArrow()

    def read_text(self, location: str, max_bytes: int) -> str:
        """A small text file (a document of rules), whole."""
        rows = self.session.read.text(location, wholetext=True).limit(1).toArrow().to_pylist()
        return rows[0]["value"][:max_bytes] if rows else ""

    def catalog_summary(self) -> tuple[str, list[str]]:
        """(the current catalog, its databases' names): what `dsstar doctor` says it found."""
        catalog = self.session.catalog
        return catalog.currentCatalog(), [database.name for database in catalog.listDatabases()]

    def close(self) -> None:
        try:
            self.session.stop()
        except Exception:  # noqa: BLE001 - the server may be gone already.
            pass
