"""A real Spark Connect server for tests: pyspark's own (`SparkConnectServer`, `local[2]`), started
in the foreground as a child process bound to 127.0.0.1, its web UI's REST API on a free loopback
port (to see which jobs ran, and how they ended). Skips, saying why, without Java or pyspark.

    with SparkConnectServer(tmp_path) as server:
        server.remote   # sc://127.0.0.1:PORT
        server.jobs()   # the application's jobs, as the REST API lists them
        server.executions()  # its SQL executions, each with its physical plan
        server.api("stages") # any other REST API path of the application

`conf` adds server settings; `master` ("local-cluster[1,2,1024]": a separate executor JVM) serves
benchmarks/spark_cancel_measure.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

START_TIMEOUT_S = 120.0
CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def why_not() -> str | None:
    """Why a Spark Connect server cannot run here (None: it can)."""
    if shutil.which("java") is None:
        return "no Java runtime (java): install openjdk-17-jre-headless"
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return "pyspark is not installed: pip install -e '.[spark]'"
    home = Path(spec.origin).parent
    if not list((home / "jars").glob("spark-connect_*.jar")):
        return f"pyspark at {home} ships no Spark Connect server jar"
    return None


def _die_with_us() -> None:
    """In the server's process: SIGKILL when the test process dies (spark-submit execs the JVM, which
    keeps it), so a killed test run leaves no JVM behind."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SparkConnectServer:
    def __init__(self, folder: Path, conf: dict | None = None, master: str = "local[2]"):
        self.folder, self.extra_conf, self.master = folder, conf or {}, master
        self.port, self.ui_port = free_port(), free_port()
        self.remote = f"sc://127.0.0.1:{self.port}"
        self.log = folder / "spark-connect.log"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "SparkConnectServer":
        home = Path(importlib.util.find_spec("pyspark").origin).parent
        conf = {"spark.connect.grpc.binding.port": self.port, "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                "spark.ui.port": self.ui_port, "spark.ui.showConsoleProgress": "false",
                "spark.sql.shuffle.partitions": "2", "spark.local.dir": str(self.folder / "spark-local"),
                # Cancelling is cooperative: a task stops at its next look at the interrupt flag, once
                # per input row with Parquet's row reader, once per 4,096-row batch with the vectorized
                # one (the tests' tiny tables are one batch: a cancelled task would run on to its end).
                "spark.sql.parquet.enableVectorizedReader": "false", **self.extra_conf}
        argv = [str(home / "bin" / "spark-submit"), "--class", CLASS, "--master", self.master, "--driver-memory", "1g"]
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(argv, cwd=self.folder, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_us)
        deadline = time.monotonic() + START_TIMEOUT_S
        while b"Spark Connect server started" not in self.log.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-2000:]
                self.__exit__()
                raise RuntimeError(f"the Spark Connect server did not start: {tail}")
            time.sleep(0.2)  # Polls the server's own log for its start line (no event to await).
        return self

    def __exit__(self, *exc) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def api(self, path: str):
        """GET `path` of the server's application in the web UI's REST API (/api/v1/applications/ID/...)."""
        base = f"http://127.0.0.1:{self.ui_port}/api/v1/applications"
        with urllib.request.urlopen(base, timeout=10) as answer:
            app = json.load(answer)[0]["id"]
        with urllib.request.urlopen(f"{base}/{app}/{path}", timeout=10) as answer:
            return json.load(answer)

    def jobs(self) -> list[dict]:
        """Every job of the server's application."""
        return self.api("jobs")

    def executions(self) -> list[dict]:
        """Every SQL execution of the application, with its physical plan (`planDescription`)."""
        return self.api("sql?details=false&planDescription=true&offset=0&length=100000")
