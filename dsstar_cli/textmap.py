"""One text function applied to every string inside JSON-like data (dicts, lists and tuples walked):
how credentials are masked and control characters made visible in events, prompts and results."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, TypeVar

T = TypeVar("T")


def map_strings(value: Any, text: Callable[[str], str]) -> Any:
    """`value` with `text` applied to each string inside it; everything else as it was."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {key: map_strings(item, text) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(map_strings(item, text) for item in value)
    return value


def map_fields(record: T, text: Callable[[str], str]) -> T:
    """A copy of the dataclass `record` with `text` applied to every string in every field."""
    return dataclasses.replace(record, **{f.name: map_strings(getattr(record, f.name), text)
                                          for f in dataclasses.fields(record) if f.init})
