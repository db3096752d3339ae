"""Turn a maintenance operation's result into the metadata a person reads in the Dagster UI.

Presentation only: numbers come from ``delta_core`` snapshots (file counts and sizes) and from
the operation's typed metrics record; nothing here reads or interprets the Delta log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from dagster import MetadataValue, TableColumn, TableRecord, TableSchema

from delta_core.maintenance.bin_packing import count_partitions
from delta_core.model.sizes import format_size

# Upper bounds of the file-size buckets (bytes); the last bucket is open-ended.
SIZE_BUCKETS: tuple[tuple[str, int | None], ...] = (
    ("< 64 KiB", 64 * 1024),
    ("64 KiB - 1 MiB", 1024**2),
    ("1 - 16 MiB", 16 * 1024**2),
    ("16 - 64 MiB", 64 * 1024**2),
    ("64 - 256 MiB", 256 * 1024**2),
    (">= 256 MiB", None),
)


@dataclass(frozen=True, slots=True)
class FileStats:
    """Size profile of a snapshot's live files."""

    version: int
    num_files: int
    total_bytes: int
    num_partitions: int
    median_file_bytes: int
    buckets: tuple[int, ...]  # file count per SIZE_BUCKETS entry

    @classmethod
    def of(cls, snapshot: Any) -> FileStats:
        sizes = snapshot.file_columns("size").column("size")
        n = len(sizes)
        total = int(pc.sum(sizes).as_py() or 0) if n else 0
        median = int(pc.approximate_median(sizes).as_py() or 0) if n else 0
        counts = []
        lower = 0
        for _, upper in SIZE_BUCKETS:
            mask = pc.greater_equal(sizes, lower)
            if upper is not None:
                mask = pc.and_(mask, pc.less(sizes, upper))
            counts.append(int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0) if n else 0)
            lower = upper or lower
        typed = snapshot.partition_values_typed() if snapshot.partition_columns and n else None
        # the partition columns' values only: the table also holds each file's ``path``
        partitions = count_partitions([typed.column(c) for c in snapshot.partition_columns] if typed else [], n)
        return cls(version=snapshot.version, num_files=n, total_bytes=total,
                   num_partitions=partitions, median_file_bytes=median, buckets=tuple(counts))


def human_bytes(n: int | float | None) -> str:
    """A size as every surface shows it (``delta_core.model.sizes.format_size``); ``-`` for none."""
    return "-" if n is None else format_size(n)


def size_distribution(before: FileStats, after: FileStats) -> MetadataValue:
    schema = TableSchema(columns=[
        TableColumn("file_size", "string"),
        TableColumn("files_before", "int"),
        TableColumn("files_after", "int"),
    ])
    rows = [TableRecord({"file_size": label, "files_before": b, "files_after": a})
            for (label, _), b, a in zip(SIZE_BUCKETS, before.buckets, after.buckets)]
    return MetadataValue.table(rows, schema=schema)


def distribution_markdown(before: FileStats, after: FileStats) -> str:
    lines = ["| file size | files before | files after |", "|---|---:|---:|"]
    for (label, _), b, a in zip(SIZE_BUCKETS, before.buckets, after.buckets):
        if b or a:
            lines.append(f"| {label} | {b} | {a} |")
    return "\n".join(lines)


def before_after_metadata(before: FileStats, after: FileStats) -> dict[str, MetadataValue]:
    return {
        "version_before": MetadataValue.int(before.version),
        "version_after": MetadataValue.int(after.version),
        "files_before": MetadataValue.int(before.num_files),
        "files_after": MetadataValue.int(after.num_files),
        # bytes as numbers, for Dagster's plots; the same with a unit, for a person
        "bytes_before": MetadataValue.int(before.total_bytes),
        "bytes_after": MetadataValue.int(after.total_bytes),
        "size_before": MetadataValue.text(human_bytes(before.total_bytes)),
        "size_after": MetadataValue.text(human_bytes(after.total_bytes)),
        "median_file_size_before": MetadataValue.text(human_bytes(before.median_file_bytes)),
        "median_file_size_after": MetadataValue.text(human_bytes(after.median_file_bytes)),
        "file_size_distribution": size_distribution(before, after),
    }


def before_after_markdown(before: FileStats, after: FileStats) -> list[str]:
    return [
        "| | before | after |",
        "|---|---:|---:|",
        f"| Delta version | {before.version} | {after.version} |",
        f"| live files | {before.num_files} | {after.num_files} |",
        f"| total size | {human_bytes(before.total_bytes)} | {human_bytes(after.total_bytes)} |",
        f"| median file size | {human_bytes(before.median_file_bytes)} | {human_bytes(after.median_file_bytes)} |",
        "",
        "**File-size distribution**",
        "",
        distribution_markdown(before, after),
    ]


def summary_markdown(title: str, headline: Sequence[str], body: Sequence[str] = ()) -> str:
    """A short Markdown report (no links): title, bullet facts, then tables."""
    parts = [f"### {title}", ""]
    parts += [f"- {line}" for line in headline]
    if body:
        parts += [""] + list(body)
    return "\n".join(parts)


def scalar_metadata(values: Mapping[str, int | float | str | bool | None]) -> dict[str, MetadataValue]:
    """Typed metadata entries for plain values (None becomes the text 'none')."""
    out: dict[str, MetadataValue] = {}
    for key, value in values.items():
        if value is None:
            out[key] = MetadataValue.text("none")
        elif isinstance(value, bool):
            out[key] = MetadataValue.bool(value)
        elif isinstance(value, int):
            out[key] = MetadataValue.int(value)
        elif isinstance(value, float):
            out[key] = MetadataValue.float(value)
        else:
            out[key] = MetadataValue.text(value)
    return out
