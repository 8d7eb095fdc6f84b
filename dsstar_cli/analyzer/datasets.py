"""Many files described as one dataset, so the model reads them together instead of one by one:

- a hive-partitioned folder (`sales/year=2024/month=01/part-0.parquet`): its partition columns
  come from the folder names;
- files of one schema in one folder (22 yearly CSVs with the same header among 45 files; Parquet
  parts whose names differ only in their numbers).

`find` groups them in dsstar's process from names and first lines only (bounded reads, as
siblings.py does for folders of thousands of files); `profile` describes a group in a bounded
child (bounded.py): its member files with their row counts, total rows and size, the partition
columns, the few-valued text columns counted across every member (member_values.py), one member
profiled in full (the shared columns), and how to load them all at once.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dsstar_cli.analyzer import partial
from dsstar_cli.analyzer.formats import format_of_name
from dsstar_cli.analyzer.limits import AnalyzerLimits

MIN_FILES = 3               # Files of one schema described as a group from this many on.
LINE_FORMATS = {".csv", ".tsv", ".tab", ".psv", ".jsonl", ".ndjson"}
TABLE_FORMATS = {".parquet", ".pq", ".feather", ".arrow"}
ENCODING_CHECKS = 1000      # Members whose encoding is checked (each at most ~1.3 MB read).
SHOWN_MEMBERS = 30          # Members named with their row counts; the rest are counted.
VALUES_SHARE = 1 / 3        # Of the time bound, spent reading every member's few-valued columns.
EXTRA_CHARS = 1500          # A dataset's description may exceed one file's by this much.
PARTITION = re.compile(r"^([^=/]+)=([^/]*)$")
DIGITS = re.compile(r"\d+")


@dataclass
class Dataset:
    path: str                    # what names it: a glob below the data folder ("sales/**/*.parquet")
    members: list[str]           # relative paths, sorted
    partitions: list[str] = field(default_factory=list)   # hive keys, outermost first
    listed: bool = False         # no glob names exactly the members: the loader lists them

    def as_dict(self) -> dict:
        return asdict(self)


def _partition_root(relative: Path) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(folder holding the partitions, partition keys) when every folder below some point is
    `key=value`; else None."""
    folders = relative.parts[:-1]
    start = len(folders)
    while start > 0 and PARTITION.match(folders[start - 1]):
        start -= 1
    if start == len(folders):
        return None
    return folders[:start], tuple(PARTITION.match(part).group(1) for part in folders[start:])


def _first_line(path: Path) -> bytes | None:
    head = partial.head(path)  # At most 64 KB, never blocking.
    if not head or b"\x00" in head[:8192] or b"\n" not in head:
        return None
    return head.split(b"\n", 1)[0].rstrip(b"\r")


def _glob(folder: str, names: list[str], others: list[str]) -> tuple[str, bool]:
    """A glob naming exactly `names` in `folder` (not `others` there): (glob, listed=False); else
    the folder's glob for the suffix, marked listed (the loader names the files)."""
    prefix = os.path.commonprefix(names)
    suffix = os.path.commonprefix([name[::-1] for name in names])[::-1]
    suffix = suffix[max(0, len(prefix) + len(suffix) - min(map(len, names))):]
    pattern = f"{prefix}*{suffix}"
    exact = not any(fnmatch.fnmatchcase(other, pattern) for other in others)
    return (f"{folder}/{pattern}" if folder else pattern), not exact


def find(root: Path, relatives: list[Path]) -> list[Dataset]:
    """The datasets among `relatives` (regular files below `root`); a file is in one at most."""
    found: list[Dataset] = []
    hive: dict[tuple, list[Path]] = {}
    for relative in relatives:
        where = _partition_root(relative)
        if where and relative.suffix.lower() in LINE_FORMATS | TABLE_FORMATS:
            hive.setdefault((where[0], relative.suffix.lower(), where[1]), []).append(relative)
    taken: set[Path] = set()
    for (folder, suffix, keys), members in sorted(hive.items()):
        if len(members) >= 2:
            base, member_set = "/".join(folder), set(members)
            # The glob would also read a file of that suffix below the folder that is not a member.
            strays = any(r.parts[:len(folder)] == folder and r.suffix.lower() == suffix and r not in member_set
                         for r in relatives)
            found.append(Dataset(f"{base}/**/*{suffix}" if base else f"**/*{suffix}",
                                 [str(m) for m in sorted(members)], list(keys), listed=strays))
            taken.update(members)
    by_folder: dict[Path, list[Path]] = {}
    for relative in relatives:
        if relative not in taken:
            by_folder.setdefault(relative.parent, []).append(relative)
    for folder, inside in sorted(by_folder.items()):
        groups: dict[tuple, list[Path]] = {}
        for relative in inside:
            suffix = relative.suffix.lower()
            if suffix in LINE_FORMATS:
                head = _first_line(root / relative)
                if head is not None:
                    groups.setdefault((suffix, head), []).append(relative)
            elif suffix in TABLE_FORMATS:  # Parts of one table: names that differ only in numbers.
                groups.setdefault((suffix, DIGITS.sub("#", relative.name)), []).append(relative)
        for members in groups.values():
            if len(members) >= MIN_FILES:
                names, member_set = sorted(m.name for m in members), set(members)
                others = [r.name for r in inside if r not in member_set]
                pattern, listed = _glob("" if str(folder) == "." else str(folder), names, others)
                found.append(Dataset(pattern, [str(m) for m in sorted(members)], listed=listed))
    return found


# -- in the bounded child ------------------------------------------------------------------------

def _rows(path: Path, suffix: str) -> tuple[int, bool, str]:
    """(rows, exact, schema) of one member file, without reading a big one whole."""
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(path)
        return parquet.metadata.num_rows, True, str(parquet.schema_arrow)
    if suffix in (".feather", ".arrow"):
        import pyarrow as pa
        import pyarrow.ipc as ipc

        reader = ipc.open_file(pa.memory_map(str(path), "r"))
        return sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches)), True, str(reader.schema)
    from dsstar_cli.analyzer.csv_profiler import count_lines

    lines, exact, _ = count_lines(path, path.stat().st_size)
    header = 0 if suffix in (".jsonl", ".ndjson") else 1
    return max(lines - header, 0), exact, ""


def _counted(path: Path, suffix: str) -> tuple[int, bool, str]:
    """`_rows`, or (0, False, why) for a member that cannot be read: the others are still described."""
    try:
        return _rows(path, suffix)
    except Exception as exc:  # A damaged member must not cost the dataset its description.
        return 0, False, f"unreadable: {type(exc).__name__}"


PANDAS_CALL = re.compile(r"pd\.read_csv\(path, (.*?)\)\.?$")
SMALL_DATASET_BYTES = 256 * 1024 * 1024  # Below this, pandas with the member's own options reads them all.


def _loader(dataset: Dataset, suffix: str, member_loader: str = "", size: int = 0,
            encodings: dict[str, str] | None = None) -> str:
    """How to read every member at once: for small CSVs whose layout needs pandas' options (title
    rows, footnotes, thousands separators), or whose members differ in encoding, pd.concat with the
    member's own read_csv call (each member with its encoding); else DuckDB over the files in place
    (within the memory cap)."""
    call = PANDAS_CALL.search(member_loader)
    if (call and suffix not in (".jsonl", ".ndjson") and not dataset.partitions
            and (encodings or size < SMALL_DATASET_BYTES and re.search(
                r"skiprows|skipfooter|thousands|decimal|header=None|index_col|comment", call.group(1)))):
        files = f"sorted(glob.glob(DATA_DIR + '/{dataset.path}'))"
        if dataset.listed:  # The glob would also read other files: name the members.
            files = (f"[DATA_DIR + '/' + m for m in {dataset.members!r}]" if len(dataset.members) <= SHOWN_MEMBERS
                     else "[DATA_DIR + '/' + m for m in MEMBERS] (MEMBERS: this dataset's files)")
        options = re.sub(r",?\s*encoding='[^']*'", "", call.group(1)).strip(", ")
        table = "ENCODING = {!r}; ".format(encodings) if encodings else ""
        if encodings:  # Each member read with its own, looked up by its path under DATA_DIR.
            options += ", encoding=ENCODING.get(os.path.relpath(f, DATA_DIR), 'utf-8')"
        return (f"Load them together as one table (column filename names the member): {table}pd.concat("
                f"[pd.read_csv(f, {options}).assign(filename=f) for f in {files}], ignore_index=True).")
    if dataset.listed:
        where = "[" + ", ".join(f"'{{DATA_DIR}}/{m}'" for m in dataset.members[:SHOWN_MEMBERS]) + \
            (", ..." if len(dataset.members) > SHOWN_MEMBERS else "") + "]"
    else:
        where = f"'{{DATA_DIR}}/{dataset.path}'"
    reader = {".parquet": "read_parquet", ".pq": "read_parquet", ".jsonl": "read_json",
              ".ndjson": "read_json"}.get(suffix, "read_csv")
    if suffix in (".feather", ".arrow"):
        return ("Load them together with pd.concat(pd.read_feather(f) for f in sorted(glob.glob(DATA_DIR + "
                f"'/{dataset.path}'))).")
    options, extra = ("hive_partitioning=true", "partition columns included") if dataset.partitions else (
        "union_by_name=true, filename=true", "column filename names the member")
    return (f'Load them together as one table ({extra}): duckdb.sql(f"SELECT ... FROM {reader}({where}, '
            f'{options})").df().')


def _encodings(root: Path, members: list[str]) -> dict[str, str]:
    """The members that are not UTF-8, with the encoding each needs; {} when all are UTF-8 (then
    one reader serves them all)."""
    from dsstar_cli.analyzer.encoding import of_file

    return {m: e for m in members[:ENCODING_CHECKS] if (e := of_file(root / m))}


def profile(root: Path, fields: dict, limits: AnalyzerLimits) -> dict:
    """The dataset's description (FileDescription fields), from its members' metadata and one
    member profiled in full."""
    from dsstar_cli.analyzer import _cap, _human_size, describe_file
    from dsstar_cli.analyzer.loader_call import loader_of
    from dsstar_cli.analyzer.member_values import across_members  # pandas: in the bounded child only.

    dataset = Dataset(**fields)
    members = [Path(m) for m in dataset.members]
    suffix = members[0].suffix.lower()
    fmt = format_of_name(members[0].name)
    sizes = [os.stat(root / m).st_size for m in members]
    counted = [_counted(root / m, suffix) for m in members]
    first = describe_file(root, members[0], limits, "builtin", None)
    first_loader = first.description.split("\n")[0]  # "…; N data rows. Load with pd.read_csv(path, …)."
    if suffix in LINE_FORMATS:  # Lines to rows as the shared loader reads them: title and footnote lines out.
        extra = sum(int(n) for n in re.findall(r"\b(?:skiprows|skipfooter)=(\d+)", first_loader))
        counted = [(max(c[0] - extra, 0), c[1], c[2]) if not c[2].startswith("unreadable") else c for c in counted]
    unreadable = [m for m, c in zip(dataset.members, counted) if c[2].startswith("unreadable")]
    total, exact = sum(c[0] for c in counted), all(c[1] for c in counted)
    schemas = {c[2] for c in counted if not c[2].startswith("unreadable")}
    kind = (f"hive-partitioned by {', '.join(dataset.partitions)}" if dataset.partitions else "one schema")
    lines = [f"Dataset of {len(members):,} {fmt} files ({kind}), {_human_size(sum(sizes))} in all; "
             f"{'' if exact else 'about '}{total:,} rows in all ({'exact' if exact else 'estimated for the big files'})."]
    if dataset.partitions:
        values: dict[str, list[str]] = {key: [] for key in dataset.partitions}
        for member in members:
            for part in member.parts[:-1]:
                match = PARTITION.match(part)
                if match and match.group(1) in values and match.group(2) not in values[match.group(1)]:
                    values[match.group(1)].append(match.group(2))
        lines.append("Partition columns (from the folder names, not in the files): " + "; ".join(
            f"{key} ({len(v)} values: {', '.join(sorted(v)[:12])}{', ...' if len(v) > 12 else ''})"
            for key, v in values.items()) + ".")
    base = os.path.commonpath(dataset.members) if len(members) > 1 else ""
    base = base if base and not (root / base).is_file() else ""
    shown = [f"{os.path.relpath(m, base) if base else m} {c[0]:,}{'' if c[1] else '~'}"
             for m, c in zip(dataset.members[:SHOWN_MEMBERS], counted)]
    more = f", ... and {len(members) - SHOWN_MEMBERS:,} more" if len(members) > SHOWN_MEMBERS else ""
    lines.append(f"Files{f' in {base}/' if base else ''} (rows each): {', '.join(shown)}{more}.")
    if unreadable:
        lines.append(f"Unreadable members ({len(unreadable)}; not counted): {', '.join(unreadable[:10])}.")
    if len(schemas) > 1:
        lines.append(f"Note: the members' schemas differ ({len(schemas)} variants); union_by_name=true aligns columns.")
    encodings = _encodings(root, dataset.members) if suffix in LINE_FORMATS - {".jsonl", ".ndjson"} else {}
    if encodings:
        lines.append(f"Members differ in encoding: {', '.join(f'{m} is {e}' for m, e in list(encodings.items())[:10])}"
                     f"{', ...' if len(encodings) > 10 else ''}; the others utf-8. Read each with its own (below).")
    lines.append(_loader(dataset, suffix, first_loader, sum(sizes), encodings))
    names = [os.path.relpath(m, base) if base else m for m in dataset.members]
    across = across_members(root, dataset.members, names, loader_of(first.description),
                            limits.seconds_per_file * VALUES_SHARE)
    if across:
        lines.append(across)
    alone = " (figures from this member alone)" if across else ""
    lines.append(f"Every member has the columns of {members[0]}, profiled here{alone}:\n{first.description}")
    return {"path": dataset.path, "format": f"{fmt} dataset", "size_bytes": sum(sizes), "method": "builtin",
            "description": _cap("\n".join(lines), limits.max_description_chars + EXTRA_CHARS), "error": None}
