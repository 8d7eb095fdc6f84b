"""Parquet and Feather (Arrow IPC) files, through pyarrow: the schema and row count come from the
file's metadata (exact, no full read); only the first rows are loaded as a sample."""

from __future__ import annotations

from pathlib import Path

from dsstar_cli.analyzer.budget import Part, fit
from dsstar_cli.analyzer.frame import frame_parts
from dsstar_cli.analyzer.limits import AnalyzerLimits, NoData

SAMPLE_ROWS = 20_000


def profile_parquet(path: Path, limits: AnalyzerLimits) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise NoData(f"not a readable Parquet file: {exc}") from exc
    meta = parquet.metadata
    batches = parquet.iter_batches(batch_size=SAMPLE_ROWS)
    first = next(batches, None)
    frame = (first.to_pandas() if first is not None else parquet.schema_arrow.empty_table().to_pandas())
    sampled = f" (figures from the first {len(frame):,} of {meta.num_rows:,} rows)" if len(frame) < meta.num_rows else ""
    summary = (f"Parquet file: {meta.num_rows:,} rows (exact, from the metadata) in {meta.num_row_groups} row "
               f"group(s); {meta.num_columns} columns. Load with pd.read_parquet(path) "
               "(columns=[...] reads only the columns you need).")
    return fit([Part(summary), Part(_schema_line(parquet.schema_arrow)),
                *frame_parts(frame, limits.sample_rows, sampled)],
               limits.max_description_chars)


def profile_feather(path: Path, limits: AnalyzerLimits) -> str:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    try:
        reader = ipc.open_file(pa.memory_map(str(path), "r"))
    except (pa.ArrowException, OSError) as exc:
        raise NoData(f"not a readable Feather/Arrow file: {exc}") from exc
    rows = sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))  # Metadata only: mmap.
    first = reader.get_batch(0).slice(0, SAMPLE_ROWS) if reader.num_record_batches else None
    frame = (pa.Table.from_batches([first]) if first is not None else reader.schema.empty_table()).to_pandas()
    sampled = f" (figures from the first {len(frame):,} of {rows:,} rows)" if len(frame) < rows else ""
    summary = (f"Feather (Arrow IPC) file: {rows:,} rows (exact), {len(reader.schema)} columns. "
               "Load with pd.read_feather(path).")
    return fit([Part(summary), Part(_schema_line(reader.schema)),
                *frame_parts(frame, limits.sample_rows, sampled)],
               limits.max_description_chars)


def _schema_line(schema) -> str:
    types = ", ".join(f"{field.name}: {field.type}" for field in list(schema)[:60])
    more = f", ... ({len(schema) - 60} more)" if len(schema) > 60 else ""
    return f"Arrow schema: {types}{more}."
