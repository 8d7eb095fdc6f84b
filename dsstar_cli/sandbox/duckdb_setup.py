"""DuckDB for generated scripts: configured on import to live within the sandbox.

DuckDB queries CSV, Parquet and JSON files in place and spills to disk, so a script can answer
questions over files far bigger than its memory cap. Left alone it would not fit the sandbox: its
memory limit comes from the machine's RAM (or cgroup), not from the script's address-space cap
(RLIMIT_AS), so a big query dies with "Cannot allocate memory" or a segfault instead of spilling;
its spill folder and extension folder default to places a script may not write; it may try to
fetch extensions over the network.

So dsstar decides the settings (`settings`, in dsstar's own process) and the script's process
applies them (`install`, in the sandbox worker's child, before the script's code): when the script
imports duckdb, `duckdb.connect()` gets them as defaults (a script's own config still wins) and the
module's default connection, which `duckdb.sql()` uses, is replaced by one opened with them.
Whatever the model writes, `duckdb.sql(...)` or `duckdb.connect().sql(...)`, runs configured.

Self-contained (standard library only): the sandbox worker imports it by path.
"""

import importlib.abc
import importlib.util
import os
import sys

BASELINE_MB = 640       # Address space taken before DuckDB's buffers: Python, pandas, pyarrow, DuckDB.
MIN_LIMIT_MB = 64
MB_PER_THREAD = 256     # DuckDB wants some memory per thread; fewer threads in a small cap.
MAX_THREADS = 8


def settings(memory_mb: int, workdir: str, max_workdir_mb: int, cpus: int | None = None) -> dict:
    """DuckDB's settings for scripts capped at `memory_mb` of address space, writing to `workdir`."""
    limit = max(MIN_LIMIT_MB, (memory_mb - BASELINE_MB) // 2)
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    home = os.path.join(workdir, ".duckdb")
    return {
        "memory_limit": f"{limit}MB",
        "threads": max(1, min(cpus, limit // MB_PER_THREAD, MAX_THREADS)),
        "temp_directory": os.path.join(home, "spill"),
        # A spill file may not outgrow the per-file size limit, nor the spill the work folder's cap.
        "max_temp_directory_size": f"{max(64, min(max_workdir_mb // 2, 1000))}MB",
        "home_directory": home,
        "extension_directory": os.path.join(home, "extensions"),
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
    }


def cgroup_files() -> list[str]:
    """What DuckDB reads when it opens a database (its defaults): this process's cgroup and that
    cgroup's memory and CPU limits. A tier whose Landlock domain hides /proc and /sys must
    let a script read these few files: DuckDB sees they exist, fails to open them and aborts."""
    found = ["/proc/self/cgroup"]
    try:
        with open("/proc/self/cgroup") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        path, kinds = path.rstrip("/"), controllers.split(",")
        if controllers == "":  # cgroup v2
            found += [f"/sys/fs/cgroup{path}/memory.max", f"/sys/fs/cgroup{path}/cpu.max"]
        if "memory" in kinds:
            found.append(f"/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
        if "cpu" in kinds:
            found += [f"/sys/fs/cgroup/cpu{path}/cpu.cfs_quota_us", f"/sys/fs/cgroup/cpu{path}/cpu.cfs_period_us"]
    return found


def configure(duckdb, config: dict) -> None:
    """Make `config` the default of every connection the script opens, the default one included."""
    original = duckdb.connect

    def connect(database=":memory:", read_only=False, config=None, **kwargs):  # noqa: A002
        connection = original(database, read_only=read_only, config={**defaults, **(config or {})}, **kwargs)
        connection.execute("SET enable_progress_bar = false")  # Progress bars would fill the output.
        return connection

    defaults = dict(config)
    os.makedirs(defaults["home_directory"], exist_ok=True)  # DuckDB makes the spill folder, not its parent.
    connect.__doc__ = original.__doc__
    duckdb.connect = connect
    duckdb.set_default_connection(connect())


class _ConfigureOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when `duckdb` is imported, it lets the real import happen and then
    configures the module, once."""

    def __init__(self, config: dict):
        self.config = config

    def find_spec(self, name, path=None, target=None):
        if name != "duckdb":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        load, config = spec.loader.exec_module, self.config

        def exec_module(module):
            load(module)
            configure(module, config)

        spec.loader.exec_module = exec_module
        return spec


def install(config: dict) -> None:
    """In the script's process, before its code: configure DuckDB when the script imports it
    (importing it here would cost every pandas-only script its import time)."""
    if "duckdb" in sys.modules:
        configure(sys.modules["duckdb"], config)
    else:
        sys.meta_path.insert(0, _ConfigureOnImport(config))
