"""JSON and JSON Lines: structure as key paths with types, record tables as columns."""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any

import pandas as pd

from dsstar_cli.analyzer.frame import describe_frame
from dsstar_cli.analyzer.limits import AnalyzerLimits, NoData, ProfileError

MAX_JSON_BYTES = 200 * 1024 * 1024
OUTLINE_LINES = 40
JSONL_SAMPLE_LINES = 20_000


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}.get(
        type(value), "null"
    )


def outline(value: Any, path: str = "$", depth: int = 0, out: list[str] | None = None) -> list[str]:
    """Key paths with types and an example, descending into the first element of arrays."""
    out = [] if out is None else out
    if len(out) >= OUTLINE_LINES or depth > 6:
        return out
    if isinstance(value, dict):
        out.append(f"{path}: object with {len(value)} keys")
        for key, child in list(value.items())[:25]:
            outline(child, f"{path}.{key}", depth + 1, out)
    elif isinstance(value, list):
        kinds = sorted({_type_name(v) for v in value[:1000]})
        out.append(f"{path}: array of {len(value):,} ({', '.join(kinds) or 'empty'})")
        if value:
            outline(value[0], f"{path}[0]", depth + 1, out)
    else:
        example = json.dumps(value)[:60]
        out.append(f"{path}: {_type_name(value)}, e.g. {example}")
    return out


SUMMARY_KEYS = 8     # Keys a one-line summary names.
EXAMPLE_CHARS = 40


def _example(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= EXAMPLE_CHARS else text[:EXAMPLE_CHARS] + "..."


def _keys(keys: list[str]) -> str:
    more = ", ..." if len(keys) > SUMMARY_KEYS else ""
    return ", ".join(keys[:SUMMARY_KEYS]) + more


def _kind(value: Any) -> str:
    """A value's type with what it holds: 'array of 1,000 objects', 'object with 3 keys'."""
    if isinstance(value, list):
        kinds = sorted({_type_name(v) for v in value[:1000]})
        return f"array of {len(value):,} {'/'.join(k + 's' for k in kinds) or 'values'}"
    if isinstance(value, dict):
        return f"object with {len(value):,} key{'' if len(value) == 1 else 's'}"
    return _type_name(value)


def summary(value: Any) -> str:
    """One line of what the document holds: its shape and an example, so a file listed by this line
    alone (retriever.gist) says what it is, e.g. 'JSON object of 57 entries, string -> string,
    e.g. "AL": "Alabama"'."""
    if isinstance(value, dict):
        if not value:
            return "JSON object, empty"
        kinds = sorted({_type_name(v) for v in value.values()})
        key, first = next(iter(value.items()))
        if len(kinds) == 1 and kinds[0] != "object" or len(value) > SUMMARY_KEYS:  # A mapping.
            inner = f" (keys {_keys(list(first))})" if isinstance(first, dict) else ""
            return (f"JSON object of {len(value):,} entries, string -> {'/'.join(kinds)}{inner}, "
                    f"e.g. {_example(key)}: {_example(first)}")
        fields = [f"{k} ({_kind(v)})" for k, v in value.items()]  # A record: its fields.
        return f"JSON {_kind(value)}: {_keys(fields)}"
    if isinstance(value, list):
        if not value:
            return "JSON array, empty"
        head = value[:1000]
        if all(isinstance(v, dict) for v in head):
            keys = list(dict.fromkeys(k for v in head[:100] for k in v))
            return f"JSON array of {len(value):,} objects with {len(keys)} keys: {_keys(keys)}"
        return f"JSON {_kind(value)}, e.g. {_example(value[0])}"
    return f"JSON {_type_name(value)}: {_example(value)}"


def _records_table(value: Any) -> tuple[str, list[dict]] | None:
    """The first array of objects at the top or one level down: the table a coder will load."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value[:100]):
        return "$", value
    if isinstance(value, dict):
        for key, child in value.items():
            if isinstance(child, list) and child and all(isinstance(v, dict) for v in child[:100]):
                return f"$.{key}", child
    return None


def profile_json(path: Path, limits: AnalyzerLimits) -> str:
    size = path.stat().st_size
    if size == 0:
        raise NoData("the file is empty")
    if size > MAX_JSON_BYTES:
        raise ProfileError(f"the file is {size:,} bytes, too large to parse whole for a description")
    try:
        data = path.read_bytes()
        bom = data.startswith(codecs.BOM_UTF8)
        value = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ProfileError("the file is not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise ProfileError(f"invalid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from exc
    parts = [summary(value), "Structure:", *outline(value)]
    table = _records_table(value)
    if table:
        where, records = table
        frame = pd.json_normalize(records[:JSONL_SAMPLE_LINES], max_level=1)
        keys = "".join(f"[{key!r}]" for key in where.split(".", 1)[1:])
        encoding = "utf-8-sig" if bom else "utf-8"  # json.load refuses a BOM it was not told of
        loader = f"pd.json_normalize(json.load(open(path, encoding={encoding!r})){keys}, max_level=1)"
        parts.append(f"{len(records):,} records at {where}. Load with {loader}.")
        sampled = f" (figures from the first {len(frame):,} of {len(records):,})" if len(frame) < len(records) else ""
        parts.append(describe_frame(frame, limits.sample_rows, sampled))
    return "\n".join(parts)


def profile_jsonl(path: Path, limits: AnalyzerLimits) -> str:
    records, bad, total = [], 0, 0
    with path.open("r", encoding="utf-8-sig", errors="replace") as handle:
        for line in handle:
            if not line.strip():
                continue
            total += 1
            if len(records) >= JSONL_SAMPLE_LINES:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                bad += 1
    if total == 0:
        raise ProfileError("the file has no JSON lines")
    if not records:
        raise ProfileError(f"none of the first {bad} lines is valid JSON")
    parts = [f"JSON Lines: {total:,} records. Load with pd.read_json(path, lines=True)."]
    if bad:
        parts.append(f"Warning: {bad} of the first {len(records) + bad} lines are not valid JSON.")
    if all(isinstance(r, dict) for r in records):
        rows_note = f" (figures from the first {len(records):,} of {total:,} records)" if len(records) < total else ""
        parts.append(describe_frame(pd.json_normalize(records, max_level=1), limits.sample_rows, rows_note))
    else:
        parts.extend(outline(records[0], "$[0]"))
    return "\n".join(parts)
