"""dsstar's side of one script's query channel (engine: spark): answer its `dsstar.sql` calls.

The executor starts one QueryServer per script with its end of the channel (query_channel.py) and
an engine that runs a query under a tag and interrupts by tag (engine/spark.py). The script never
holds the session, its address or its token: it sends SQL text and gets Arrow bytes back. Every
statement is checked here again (readonly_sql.py: the script's own check is only fast feedback).
When the script ends, for any reason (done, past its deadline, Ctrl-C), `stop` interrupts the
query in flight on the cluster and ends the thread.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from typing import Callable, Protocol

from dsstar_cli.sandbox import query_channel
from dsstar_cli.sandbox.readonly_sql import QueryRefused

ERROR_CHARS = 2000      # Of an engine's error (a JVM stack trace otherwise fills the script's stderr).
JOIN_S = 10.0
INTERRUPT_EVERY_S = 0.5


class QueryEngine(Protocol):
    def query(self, sql: str, tag: str, max_rows: int): ...          # -> pyarrow.Table (at most max_rows + 1 rows)
    def interrupt(self, tag: str) -> None: ...


def first_lines(text: str, limit: int = ERROR_CHARS) -> str:
    """An engine error without its JVM stack trace, cut to `limit`."""
    kept = text.split("\n\nJVM stacktrace:", 1)[0].strip()
    return kept[:limit] + (" [...]" if len(kept) > limit else "")


class QueryServer(threading.Thread):
    """Serves one script; `tag` marks its queries on the cluster (the Spark job tag)."""

    def __init__(self, sock: socket.socket, engine: QueryEngine, max_rows: int, max_bytes: int,
                 on_query: Callable[[str, float], None] | None = None):
        super().__init__(daemon=True, name="dsstar-query-server")
        self.sock, self.engine = sock, engine
        self.max_rows, self.max_bytes = max_rows, max_bytes
        self.tag = f"dsstar-{secrets.token_hex(6)}"
        self.on_query = on_query or (lambda sql, seconds: None)
        self._busy = threading.Lock()
        self._stopping = False
        self.queries = 0

    def run(self) -> None:
        fd = self.sock.fileno()
        try:
            while not self._stopping:
                request = query_channel.read_json(fd)
                if request is None:
                    return
                self._answer(fd, request.get("sql"))
        except (OSError, ValueError):
            return  # The script is gone or sent garbage: nothing more to serve.

    def _answer(self, fd: int, sql) -> None:
        import pyarrow as pa

        with self._busy:
            self.queries += 1
            try:
                if self._stopping:
                    raise RuntimeError("the script's time is up")
                table = self.engine.query(sql if isinstance(sql, str) else "", self.tag, self.max_rows)
            except QueryRefused as exc:
                return query_channel.write_json(fd, {"ok": False, "error": str(exc)})
            except Exception as exc:  # The engine's own error, for the script (and the debugger) to read.
                return query_channel.write_json(fd, {"ok": False, "error": "dsstar.sql (Spark): " +
                                                     first_lines(str(exc) or type(exc).__name__)})
        if table.num_rows > self.max_rows:
            return query_channel.write_json(fd, {"ok": False, "error": (
                f"dsstar.sql: the result has more than {self.max_rows:,} rows; aggregate or filter in SQL "
                "(GROUP BY, WHERE, LIMIT) and bring back only what the answer needs")})
        if table.nbytes > self.max_bytes:
            return query_channel.write_json(fd, {"ok": False, "error": (
                f"dsstar.sql: the result holds {table.nbytes:,} bytes, over the {self.max_bytes:,} allowed; "
                "select fewer columns or rows")})
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        query_channel.write_json(fd, {"ok": True, "rows": table.num_rows})
        query_channel.write_frame(fd, sink.getvalue().to_pybytes())

    def stop(self) -> None:
        """The script has ended: interrupt whatever it left running on the cluster, then end. The
        interrupt is repeated until the thread ends: a query may reach the cluster just after one."""
        self._stopping = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        deadline = time.monotonic() + JOIN_S
        while self.is_alive() and time.monotonic() < deadline:
            if self.queries:
                try:
                    self.engine.interrupt(self.tag)
                except Exception:  # noqa: BLE001 - the session may be gone too; nothing else to do.
                    pass
            self.join(INTERRUPT_EVERY_S)
        self.sock.close()
