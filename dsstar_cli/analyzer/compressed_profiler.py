"""Compressed files: gzip/bzip2/xz around one file (`sales.csv.gz`), and zip archives. A bounded
prefix is decompressed into a private temporary folder and described by the inner format's
profiler; nothing is ever written next to the user's files, and zip bombs stop at the cap."""

from __future__ import annotations

import bz2
import gzip
import lzma
import tempfile
import zipfile
from pathlib import Path

from dsstar_cli.analyzer.limits import AnalyzerLimits, NoData, ProfileError

DECOMPRESS_CAP = 64 * 1024 * 1024   # Bytes of decompressed data profiled per file or member.
MAX_MEMBERS_DESCRIBED = 5
MAX_MEMBERS_LISTED = 50
OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
NAMES = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}


def _inner(name: str, limits: AnalyzerLimits, source, total: int | None) -> tuple[str, str]:
    """Describe the decompressed bytes of `source` (a binary stream) as the file `name`."""
    from dsstar_cli.analyzer.formats import COMPRESSED, PROFILERS  # Here: the registry names this module.

    fmt, profiler = PROFILERS.get(Path(name).suffix.lower(), ("unknown", None))
    if profiler is None or fmt in COMPRESSED:
        head = source.read(64)  # Still proves the data decompresses, and shows how it starts.
        return fmt, f"No built-in profiler for the inner file's format; it starts with {head!r}."
    with tempfile.TemporaryDirectory(prefix="dsstar-unpack-") as folder:
        target = Path(folder) / Path(name).name
        with target.open("wb") as out:
            copied = _copy(source, out, DECOMPRESS_CAP)
        description = profiler(target, limits)
    if total is not None and copied >= total:
        return fmt, description
    return fmt, (f"Profiled from the first {copied:,} bytes decompressed (the cap): row counts and values "
                 f"below describe that part only.\n{description}")


def _copy(source, out, cap: int) -> int:
    copied = 0
    while copied < cap:
        block = source.read(min(1 << 20, cap - copied))
        if not block:
            break
        out.write(block)
        copied += len(block)
    return copied


def profile_compressed(path: Path, limits: AnalyzerLimits) -> str:
    suffix = path.suffix.lower()
    inner_name = path.name[: -len(suffix)]
    try:
        with OPENERS[suffix](path, "rb") as source:
            fmt, description = _inner(inner_name, limits, source, None)
    except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
        raise ProfileError(f"cannot decompress it as {NAMES[suffix]}: {exc}") from exc
    return (f"{NAMES[suffix]}-compressed {fmt} file ({inner_name}); pandas reads it directly "
            f"(compression is inferred from the name).\n{description}")


def profile_zip(path: Path, limits: AnalyzerLimits) -> str:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise NoData(f"not a readable zip archive: {exc}") from exc
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        parts = [f"Zip archive with {len(members)} file(s). Read a member with "
                 "zipfile.ZipFile(path).open(name) (pd.read_csv accepts the open member)."]
        parts.extend(f"- {m.filename} ({m.file_size:,} bytes)" for m in members[:MAX_MEMBERS_LISTED])
        if len(members) > MAX_MEMBERS_LISTED:
            parts.append(f"- ... and {len(members) - MAX_MEMBERS_LISTED} more")
        for member in members[:MAX_MEMBERS_DESCRIBED]:
            try:
                with archive.open(member) as source:
                    fmt, description = _inner(member.filename, limits, source, member.file_size)
            except (ProfileError, zipfile.BadZipFile, RuntimeError, OSError, EOFError) as exc:
                fmt, description = "?", f"Unusable: {exc}."
            parts.append(f"\nMember {member.filename} ({fmt}):\n{description}")
    return "\n".join(parts)


