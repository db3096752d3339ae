"""Summaries of what rewrite tasks read, for the proof that a rewrite kept the data.

``delta_core.write.rewrite_proof`` compares a rewrite's inputs with its outputs using the inputs'
stats (PROTOCOL.md "Per-file Statistics"). An input whose stats cannot stand in that proof (none,
no ``numRecords``, a missing ``nullCount``, a deletion vector) is summarised instead from the rows
the task read anyway: ``SummarisingReader`` collects the same stats a writer would (every column,
logical names) while the rows stream past, and hands them back as ``InputSummary`` records.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from delta_core.maintenance.data_io import DataFileReader
from delta_core.model.actions import DeletionVectorDescriptor, Metadata
from delta_core.model.schema import StructType
from delta_core.model.stats_collect import StatsCollector
from delta_core.storage.base import Storage
from delta_core.write.rewrite_proof import InputSummary, inputs_needing_summary
from delta_core.write.row_tracking import FileRowIds

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot


class SummarisingReader(DataFileReader):
    """A ``DataFileReader`` that also keeps stats of the rows it reads from the files in
    ``summarise`` (paths as in the log)."""

    def __init__(self, storage: Storage, metadata: Metadata, *, summarise: Collection[str],
                 columns: Sequence[str] | None = None, row_ids: Mapping[str, FileRowIds] | None = None,
                 schema: StructType | None = None) -> None:
        super().__init__(storage, metadata, columns=columns, row_ids=row_ids, schema=schema)
        self._summarise = frozenset(summarise)
        self._collectors: dict[str, StatsCollector] = {}

    def chunks(self, path: str, *, size: int | None = None,
               deletion_vector: DeletionVectorDescriptor | None = None) -> Iterator[pa.Table]:
        if path not in self._summarise:
            yield from super().chunks(path, size=size, deletion_vector=deletion_vector)
            return
        # One collector per file, made before its first chunk: read-ahead threads never share one.
        # The chunks come with the deletion vector applied: the summary counts live rows only.
        collector = self._collectors[path] = StatsCollector(self.schema, num_indexed_cols=-1)
        for chunk in super().chunks(path, size=size, deletion_vector=deletion_vector):
            collector.update(chunk)
            yield chunk

    def summaries(self) -> list[InputSummary]:
        return [InputSummary(path, c.json()) for path, c in self._collectors.items()]


def paths_to_summarise(snapshot: Snapshot, paths: Iterable[str]) -> set[str]:
    """The inputs among ``paths`` (live in ``snapshot``) whose stats cannot stand in the proof."""
    # Every column, as the batch's commit reads the same rows next (``files_at`` keeps them).
    return inputs_needing_summary(snapshot.files_of(paths), snapshot.metadata)


def split_results(lines: Iterable[str]) -> tuple[list[str], list[InputSummary]]:
    """A task's result lines -> (the ``add`` JSON lines, the input summaries)."""
    adds: list[str] = []
    summaries: list[InputSummary] = []
    for line in lines:
        summary = InputSummary.from_json(line)
        if summary is None:
            adds.append(line)
        else:
            summaries.append(summary)
    return adds, summaries
