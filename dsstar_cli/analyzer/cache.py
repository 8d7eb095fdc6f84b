"""Descriptions cached across runs, so a second question on the same folder does no analysis.
(Descriptions made through a query engine are keyed on the cluster's listing: `listing_key`.)

The key is the file's identity (relative path, size, mtime) plus a hash of a few sampled blocks
(head, tail and spread-out middle blocks: a same-size, same-mtime rewrite is still caught, yet no
file is read whole to compute a key), together with the analyzer's version, its mode and limits.
Entries are small JSON files written atomically, so parallel runs can share the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

# Bump when a profiler's output changes, so old descriptions are not reused.
ANALYZER_VERSION = "10"  # Bumped whenever descriptions change: no stale description is served.
BLOCK = 64 * 1024
MIDDLE_BLOCKS = 4


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/dsstar, else ~/.cache/dsstar (the user cache dir on Linux)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dsstar" / "descriptions"


def sampled_hash(path: Path, size: int) -> str:
    digest = hashlib.blake2b(digest_size=16)
    offsets = {0, max(0, size - BLOCK)}
    offsets.update(size * k // (MIDDLE_BLOCKS + 1) for k in range(1, MIDDLE_BLOCKS + 1))
    with path.open("rb") as handle:
        for offset in sorted(offsets):
            handle.seek(offset)
            digest.update(handle.read(BLOCK))
    return digest.hexdigest()


def cache_key(path: Path, relative: str, context: str) -> str | None:
    """None when the file cannot be read (nothing to cache)."""
    try:
        st = path.stat()
        blocks = sampled_hash(path, st.st_size)
    except OSError:
        return None
    identity = f"{ANALYZER_VERSION}|{context}|{relative}|{st.st_size}|{st.st_mtime_ns}|{blocks}"
    return hashlib.sha256(identity.encode()).hexdigest()


def listing_key(context: str, listed) -> str:
    """The key of a description made through a query engine (analyzer/engine_describer.py), from
    what the cluster's listing says of its files: (path, size, modification time) each, sorted.
    Nothing is read to make it; a rewrite that keeps a file's size and its time is not caught (the
    cluster's storage is not this machine's to sample). `context` names the cluster (its address,
    never its token), the location and whatever else shapes the description."""
    identity = "\n".join(f"{path}|{size}|{modified}" for path, size, modified in sorted(listed))
    return hashlib.sha256(f"{ANALYZER_VERSION}|engine|{context}\n{identity}".encode()).hexdigest()


class DescriptionCache:
    def __init__(self, folder: Path):
        self.folder = folder

    key = staticmethod(cache_key)
    listing_key = staticmethod(listing_key)

    def _entry(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            return json.loads(self._entry(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # Missing or damaged entries are simply described again.

    def put(self, key: str, record: dict) -> None:
        """Best effort: an unwritable cache costs speed, never the run."""
        entry = self._entry(key)
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=entry.parent, delete=False,
                                             suffix=".tmp") as handle:
                json.dump(record, handle)
            os.replace(handle.name, entry)
        except OSError:
            pass
