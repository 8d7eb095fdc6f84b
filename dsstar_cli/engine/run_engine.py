"""The engine of one run, in the few calls the runner makes: where the data is, how it is
described, what scripts' `dsstar.sql` is wired to, and the session closed at the end.

engine: duckdb  DATA_DIR is a local folder (checked as always); the analyzer describes its files;
                scripts query them in their own sandbox (views over the files).
engine: spark   DATA_DIR is a location the cluster reads, never copied here; dsstar connects, the
                engine describes and registers its tables; scripts get an empty data folder and
                query through the channel to dsstar's session.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable

from dsstar_cli.engine import EngineSettings, settings as engine_settings
from dsstar_cli.engine.note import local_note, prompt_note
from dsstar_cli.engine.tables import duckdb_setup

SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
NO_LOCAL_DATA = Path("/nonexistent/dsstar-remote-data")  # Holds no run folder: the data is not here.


def spark_location(raw: str) -> str:
    """DATA_DIR as the cluster is given it: a URI as written, a plain path made absolute."""
    text = str(raw).strip()
    return text.rstrip("/") if SCHEME.match(text) else os.path.abspath(text)


class RunEngine:
    def __init__(self, settings: EngineSettings, location: str, spark=None):
        self.settings, self.location, self.spark = settings, location, spark
        self.setup: dict = {}

    @classmethod
    def open(cls, config, raw_location, check_local: Callable[[Path], Path]) -> "RunEngine":
        """Check the folder (duckdb) or connect (spark): SetupError or DataFolderError in one line."""
        settings = engine_settings(config)
        if not settings.is_spark:
            return cls(settings, str(check_local(Path(raw_location))))
        from dsstar_cli.engine.spark import SparkEngine

        return cls(settings, spark_location(raw_location), SparkEngine.connect(settings))

    @property
    def local_dir(self) -> Path:
        """The data folder on this machine (for the run folder's placement); none with Spark."""
        return Path(self.location) if self.spark is None else NO_LOCAL_DATA

    def sandbox_data_dir(self, run_path: Path) -> Path:
        """What scripts may read: the data folder, or with Spark an empty folder (the data is remote)."""
        if self.spark is None:
            return Path(self.location)
        empty = run_path / "engine-data"
        empty.mkdir(exist_ok=True)
        return empty

    def describe(self, analyse_local: Callable[[], list], config, emit, cache=None) -> list:
        """The data's descriptions: the analyzer's (local), or the engine's (Spark, tables registered;
        from `cache` when the cluster lists the same files as when they were made)."""
        if self.spark is None:
            return analyse_local()
        from dsstar_cli.analyzer.engine_describer import describe_location

        return describe_location(self.spark, self.location, config["analyzer.sample_rows"],
                                 config["analyzer.max_text_bytes"], emit, cache)

    def take(self, files: list) -> None:
        """Descriptions made already (a batch's, once for all its questions): with Spark, this run's
        session registers their tables; nothing is counted again."""
        if self.spark is not None:
            from dsstar_cli.analyzer.engine_describer import register_tables

            register_tables(self.spark, self.location, files)

    def attach(self, executor, files: list) -> str:
        """Wire scripts' dsstar.sql to this engine; the note the prompts get about querying."""
        caps = (self.settings.max_rows, self.settings.max_bytes)
        if self.spark is None:
            self.setup = duckdb_setup(files, self.location, *caps)
            executor.use_engine(self.setup)
            return local_note(self.setup, files)
        from dsstar_cli.analyzer.engine_describer import spark_setup

        self.setup = spark_setup(files, *caps)
        executor.use_engine(self.setup, self.spark)
        return prompt_note(self.setup)

    def describe_for_result(self) -> dict:
        found = {"kind": self.settings.kind}
        if self.spark is not None:
            found.update(remote=self.settings.shown_remote(), version=self.spark.version)
        return found

    def close(self) -> None:
        if self.spark is not None:
            self.spark.close()
