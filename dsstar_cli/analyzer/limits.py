"""What every profiler shares: its size limits and the error that says a file is unusable."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class ProfileError(Exception):
    """The file cannot be read as its format; the message says what is wrong with it."""


class NoData(ProfileError):
    """Nothing in the file can be read as data: it is empty, or its bytes are not its format at all
    (binary junk named `.csv`, a `.parquet` that is no Parquet file). A folder holding only such
    files is refused before any model call (runner.check_usable)."""


def read_text_head(path: Path, limit: int, kind: str, scan: int = 8192) -> tuple[bytes, int]:
    """(the first `limit` bytes, the file size) of a file that should hold text; a ProfileError
    when it is empty or holds binary data (NUL bytes in its first `scan` bytes)."""
    size = path.stat().st_size
    if size == 0:
        raise NoData("the file is empty")
    with path.open("rb") as handle:
        head = handle.read(limit)
    if b"\x00" in head[:scan]:
        raise NoData(f"the file holds binary data (NUL bytes), not {kind}")
    return head, size


@dataclass(frozen=True)
class AnalyzerLimits:
    max_description_chars: int = 3000
    sample_rows: int = 3
    max_text_bytes: int = 200_000
    memory_mb: int = 1024           # address-space bound of the process profiling one file
    seconds_per_file: float = 60.0  # wall-clock bound of profiling one file
