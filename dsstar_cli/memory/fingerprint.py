"""What a remembered answer rests on: the identity of the data folder and a fingerprint of each file
its script read.

A fingerprint is (size, mtime_ns, content hash). The hash is BLAKE2b of the whole file up to
FULL_HASH_BYTES (16 MiB); a bigger file is hashed from its size, its first and last 4 MiB and 16
slices of 64 KiB spread evenly between them: at most 9 MiB read, whatever the file's size (about
20 ms from the page cache). A sampled hash could miss an edit between its slices, so for such a file
the mtime must match too; a fully hashed file is unchanged when its size and hash match (a copy
with a new mtime but the same bytes still counts as unchanged).

A fingerprint is only ever taken of a path inside the data folder: an entry naming `../x`, an
absolute path, or a link that now leads outside gets no fingerprint (it counts as changed), so an
entry can never make dsstar read outside the folder it was made from.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

FULL_HASH_BYTES = 16 * 1024 * 1024
EDGE_BYTES = 4 * 1024 * 1024
SLICES, SLICE_BYTES = 16, 64 * 1024
CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Fingerprint:
    path: str        # relative to the data folder
    size: int
    mtime_ns: int
    hash: str
    sampled: bool    # the hash covers slices of the file, not all of it

    def as_dict(self) -> dict:
        return asdict(self)


def folder_identity(data_dir: Path) -> str:
    """The data folder as the memory knows it: its resolved path (links followed). A folder replaced
    at the same path is the same folder whose files changed: its entries are re-checked, not reused."""
    return str(data_dir.resolve())


def take(data_dir: Path, path: str) -> Fingerprint | None:
    """The file's fingerprint now; None when it is missing, not a regular file, or not inside the folder."""
    target = _inside(data_dir, path)
    if target is None:
        return None
    try:
        fd = os.open(target, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        sampled = st.st_size > FULL_HASH_BYTES
        digest = _sampled_hash(fd, st.st_size) if sampled else _full_hash(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    return Fingerprint(path, st.st_size, st.st_mtime_ns, digest, sampled)


def unchanged(old: Fingerprint, new: Fingerprint | None) -> bool:
    """Whether the file is as it was when `old` was taken (see the module docstring)."""
    if new is None or (old.size, old.hash, old.sampled) != (new.size, new.hash, new.sampled):
        return False
    return not old.sampled or old.mtime_ns == new.mtime_ns


def changed(data_dir: Path, prints: list[Fingerprint], taken: dict[str, Fingerprint | None] | None = None) -> list[str]:
    """The paths among `prints` whose files are not as they were (changed, gone, or no longer inside
    the folder). `taken`: the fingerprints taken so far this time, by path, filled as it goes, so a
    file that many entries read is hashed once."""
    taken = {} if taken is None else taken
    found = []
    for old in prints:
        if old.path not in taken:
            taken[old.path] = take(data_dir, old.path)
        if not unchanged(old, taken[old.path]):
            found.append(old.path)
    return found


def _inside(data_dir: Path, path: str) -> Path | None:
    relative = PurePosixPath(path)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        return None
    root = data_dir.resolve()
    target = (root / relative).resolve()
    return target if root in target.parents else None


def _full_hash(fd: int) -> str:
    digest = hashlib.blake2b(digest_size=20)
    while chunk := os.read(fd, CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def _sampled_hash(fd: int, size: int) -> str:
    digest = hashlib.blake2b(str(size).encode(), digest_size=20)
    middle = size - 2 * EDGE_BYTES
    spots = [0] + [EDGE_BYTES + middle * i // (SLICES + 1) for i in range(1, SLICES + 1)] + [size - EDGE_BYTES]
    lengths = [EDGE_BYTES] + [SLICE_BYTES] * SLICES + [EDGE_BYTES]
    for offset, length in zip(spots, lengths):
        while length > 0:
            chunk = os.pread(fd, min(CHUNK, length), offset)
            if not chunk:
                break
            digest.update(chunk)
            offset, length = offset + len(chunk), length - len(chunk)
    return "s:" + digest.hexdigest()
