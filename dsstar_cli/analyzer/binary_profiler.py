"""Images, PDFs and other binary files: what they are (from their first bytes) and their size.
Data formats recognised by content whatever their name (SQLite, Parquet, ...) are named too, so the
analyzer can route a misnamed file to the right profiler."""

from __future__ import annotations

import struct
from pathlib import Path

from dsstar_cli.analyzer.limits import AnalyzerLimits

# (magic prefix, kind) checked in order.
MAGIC = (
    (b"SQLite format 3\x00", "sqlite"),
    (b"PAR1", "parquet"),
    (b"ARROW1", "feather"),
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"BM", "BMP image"),
    (b"II*\x00", "TIFF image"),
    (b"MM\x00*", "TIFF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "zip archive (or an Office document)"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "legacy Microsoft Office file (.xls/.doc)"),
    (b"\x7fELF", "ELF executable"),
    (b"\x93NUMPY", "NumPy array (.npy)"),
)


def sniff(head: bytes) -> str | None:
    for prefix, kind in MAGIC:
        if head.startswith(prefix):
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP image"
    return None


def looks_binary(head: bytes) -> bool:
    """NUL bytes, or mostly non-text bytes, in the first block."""
    if not head:
        return False
    if b"\x00" in head:
        return True
    text = sum(1 for b in head if b in b"\t\n\r" or 32 <= b < 127 or b >= 128)
    return text / len(head) < 0.9


def profile_binary(path: Path, limits: AnalyzerLimits) -> str:
    with path.open("rb") as handle:
        head = handle.read(64)
    size = path.stat().st_size
    kind = sniff(head) or ("binary data of an unrecognised kind" if looks_binary(head) else "text of an unknown format")
    details = _image_size(head, kind)
    return (f"{kind[0].upper()}{kind[1:]}{details}, {size:,} bytes; not tabular data, so only its type and size "
            f"are described (first bytes: {head[:16].hex(' ')}).")


def _image_size(head: bytes, kind: str) -> str:
    try:
        if kind == "PNG image" and len(head) >= 24:
            width, height = struct.unpack(">II", head[16:24])
            return f", {width}x{height} pixels"
        if kind == "GIF image" and len(head) >= 10:
            width, height = struct.unpack("<HH", head[6:10])
            return f", {width}x{height} pixels"
    except struct.error:
        pass
    return ""
