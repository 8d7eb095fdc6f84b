"""Where the scripts' queries run: the engine setting, read from the config cascade.

`engine: duckdb` (the default) keeps everything on this machine: a script's `dsstar.sql(...)` runs
in DuckDB inside its own sandbox. `engine: spark` sends it to a Spark cluster through Spark
Connect; dsstar's own process alone holds that session (spark.py), and a script's query reaches
it over the sandbox's query channel (sandbox/query_server.py), so scripts still get no network.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from dsstar_cli.errors import SetupError

DOCS = "see README, 'Past one machine'"
INSTALL_SPARK = "pip install -e '.[spark]' (pyspark with its Spark Connect client)"


@dataclass(frozen=True)
class EngineSettings:
    kind: str                    # "duckdb" or "spark"
    remote: str | None = None    # sc://host:port (spark)
    token_env: str | None = None  # the NAME of the variable holding the token, never its value
    max_rows: int = 100_000      # what one dsstar.sql call may return
    max_bytes: int = 64 * 1024 * 1024

    @property
    def is_spark(self) -> bool:
        return self.kind == "spark"

    def token(self) -> str | None:
        """The token, read from its variable at the moment of connecting (never kept, never logged)."""
        if not self.token_env:
            return None
        value = os.environ.get(self.token_env, "")
        if not value:
            raise SetupError(f"spark.token_env names {self.token_env}, which is not set: export it, or set "
                             "spark.token_env to null for a cluster that needs no token")
        return value

    def address(self) -> str:
        """The remote without the parameters an sc:// address may carry after "/;" (a token among
        them): what names the cluster in the description cache's keys."""
        return str(self.remote).split("/;", 1)[0].rstrip("/")

    def shown_remote(self) -> str:
        """The address as it may be shown: with the token's variable named, never its value."""
        return f"{self.remote} (token from ${self.token_env})" if self.token_env else str(self.remote)


def settings(config) -> EngineSettings:
    """The engine settings of a validated Config; a SetupError when engine: spark lacks its address."""
    kind = config["engine"]
    found = EngineSettings(kind, config["spark.remote"], config["spark.token_env"], config["query.max_rows"],
                           config["query.max_mb"] * 1024 * 1024)
    if found.is_spark and not found.remote:
        raise SetupError("engine: spark needs spark.remote, the Spark Connect address (sc://host:15002): set it in "
                         "dsstar.yaml or DSSTAR_SPARK_REMOTE")
    return found
