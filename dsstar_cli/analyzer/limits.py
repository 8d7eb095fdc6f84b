"""What every profiler shares: its size limits and the error that says a file is unusable."""

from __future__ import annotations

from dataclasses import dataclass


class ProfileError(Exception):
    """The file cannot be read as its format; the message says what is wrong with it."""


@dataclass(frozen=True)
class AnalyzerLimits:
    max_description_chars: int = 3000
    sample_rows: int = 3
    max_text_bytes: int = 200_000
