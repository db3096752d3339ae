"""Row tracking on the write side: fresh row ids and row commit versions for every file a commit
adds, and the high-water mark that keeps them unique (PROTOCOL.md "Row Tracking" > "Writer
Requirements for Row Tracking").

While ``rowTracking`` is among the writer features and ``delta.rowTrackingSuspended`` is not
true, every ``add`` we commit gets ``baseRowId`` (ids above the ``rowIdHighWaterMark`` of the
``delta.rowTracking`` domain, one per physical row of the file) and ``defaultRowCommitVersion``
(the version of the commit holding it), and the commit raises the high-water mark with a
``domainMetadata`` action. Both depend on the version a commit lands at and on the mark the
winners of a race left, so ``Transaction`` applies ``assign_row_ids`` to every attempt, with the
mark of the latest commit it has seen. An ``add`` that already carries them (a re-committed
file) keeps them, as the protocol asks.

When row tracking is *enabled* (``delta.enableRowTracking``), a rewrite copying rows must keep
each row's stable row id and row commit version: it writes them to the materialized columns the
table's configuration names (hidden: not in the schema), taking the value a row already has
there, else its default (``baseRowId`` + the row's physical index in its file, or the file's
``defaultRowCommitVersion``): ``materialized_fields`` and ``stable_row_tracking``. Such commits
carry the ``delta.rowTracking.preserved`` tag, as Delta Spark's do (``preserved_tags``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import CorruptLogError, InvalidTransactionError
from delta_core.model.actions import Action, Add, DomainMetadata, Metadata, Protocol
from delta_core.model.schema import PrimitiveType, StructField
from delta_core.model.table_features import writer_features
from delta_core.model.table_properties import (
    ENABLE_ROW_TRACKING,
    MATERIALIZED_ROW_COMMIT_VERSION_COLUMN,
    MATERIALIZED_ROW_ID_COLUMN,
    TableProperties,
)

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

ROW_TRACKING_DOMAIN = "delta.rowTracking"
HIGH_WATER_MARK_KEY = "rowIdHighWaterMark"
PRESERVED_TAG = "delta.rowTracking.preserved"  # commitInfo tag, as Delta Spark writes it
NO_ROW_IDS = -1  # the mark of a table that never assigned a row id: the first id is 0


def assigns_row_ids(protocol: Protocol, configuration: Mapping[str, str]) -> bool:
    """Whether commits must assign fresh row ids: supported and not suspended."""
    return "rowTracking" in writer_features(protocol) and not TableProperties(configuration).row_tracking_suspended


def row_tracking_enabled(protocol: Protocol, configuration: Mapping[str, str]) -> bool:
    """Whether rows' stable ids can be relied on, so that rewrites must preserve them."""
    return assigns_row_ids(protocol, configuration) and TableProperties(configuration).row_tracking_enabled


def high_water_mark(domains: Iterable[DomainMetadata], *, version: int | None = None) -> int | None:
    """The ``rowIdHighWaterMark`` among ``domains`` (None when none is about row tracking)."""
    mark: int | None = None
    for d in domains:
        if d.domain != ROW_TRACKING_DOMAIN or d.removed:
            continue
        try:
            value = json.loads(d.configuration)[HIGH_WATER_MARK_KEY]
            parsed = int(value)
        except (ValueError, TypeError, KeyError) as exc:
            raise CorruptLogError(
                f"domain {ROW_TRACKING_DOMAIN} has configuration {d.configuration!r}, not a JSON object "
                f"with an integer {HIGH_WATER_MARK_KEY}; the table's row ids cannot be assigned safely - "
                "repair the log with the writer that produced it", version=version) from exc
        if isinstance(value, bool) or parsed != value:
            raise CorruptLogError(
                f"domain {ROW_TRACKING_DOMAIN} has {HIGH_WATER_MARK_KEY}={value!r}, not an integer",
                version=version)
        mark = parsed if mark is None else max(mark, parsed)
    return mark


def _num_records(add: Add, *, path: str | None, version: int) -> int:
    try:
        n = json.loads(add.stats or "{}").get("numRecords")
    except ValueError:
        n = None
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise InvalidTransactionError(
            f"add {add.path!r} has no numRecords in its stats, so its row ids cannot be assigned on this "
            "row-tracking table; write the file with stats (delta_core's writers always do)",
            path=path, version=version)
    return n


def assign_row_ids(actions: Sequence[Action], *, mark: int, version: int,
                   path: str | None = None) -> list[Action]:
    """``actions`` with ``baseRowId``/``defaultRowCommitVersion`` set on every ``add`` lacking
    them (fresh ids from ``mark + 1``, in order) and, when ids were handed out, the raised
    high-water mark as a ``delta.rowTracking`` domain at the end. ``mark`` is the table's
    current high-water mark (``NO_ROW_IDS`` if none)."""
    out: list[Action] = []
    next_id = mark + 1
    for a in actions:
        if isinstance(a, DomainMetadata) and a.domain == ROW_TRACKING_DOMAIN:
            raise InvalidTransactionError(
                f"the {ROW_TRACKING_DOMAIN} domain is written by the transaction when it assigns row ids; "
                "do not stage it", path=path, version=version)
        if isinstance(a, Add):
            base = a.base_row_id
            if base is None:
                base = next_id
                # A file of n rows uses ids base .. base + n - 1; an empty one uses none.
                next_id += _num_records(a, path=path, version=version)
            commit_version = a.default_row_commit_version
            a = dataclasses.replace(a, base_row_id=base,
                                    default_row_commit_version=version if commit_version is None else commit_version)
        out.append(a)
    if next_id - 1 > mark:
        out.append(DomainMetadata(ROW_TRACKING_DOMAIN, json.dumps({HIGH_WATER_MARK_KEY: next_id - 1}, separators=(",", ":"))))
    return out


@dataclass(frozen=True, slots=True)
class FileRowIds:
    """A file's default row ids and row commit version, as its live ``add`` holds them."""

    base_row_id: int | None
    default_row_commit_version: int | None

    @classmethod
    def of(cls, add: Add) -> FileRowIds:
        return cls(add.base_row_id, add.default_row_commit_version)


def materialized_columns(metadata: Metadata) -> tuple[str, str] | None:
    """The materialized (row id, row commit version) column names when the table's rows have
    stable ids to preserve (row tracking enabled, not suspended); else None."""
    conf = metadata.configuration or {}
    props = TableProperties(conf)
    if not props.row_tracking_enabled or props.row_tracking_suspended:
        return None
    row_id, commit_version = conf.get(MATERIALIZED_ROW_ID_COLUMN), conf.get(MATERIALIZED_ROW_COMMIT_VERSION_COLUMN)
    if not row_id or not commit_version:
        raise CorruptLogError(
            f"{ENABLE_ROW_TRACKING}=true but {MATERIALIZED_ROW_ID_COLUMN} or "
            f"{MATERIALIZED_ROW_COMMIT_VERSION_COLUMN} is not set, so rows' stable ids cannot be kept; "
            "repair the table's configuration with the writer that enabled row tracking")
    return row_id, commit_version


def materialized_fields(metadata: Metadata) -> tuple[StructField, ...]:
    """The hidden long columns data files of the table may carry (empty when not enabled)."""
    names = materialized_columns(metadata)
    if names is None:
        return ()
    return tuple(StructField(name, PrimitiveType("long"), True) for name in names)


def stable_row_tracking(chunk: pa.Table, row_index: pa.Array, ids: FileRowIds, *,
                        columns: tuple[str, str], file: str) -> pa.Table:
    """``chunk`` (rows of one file, with the materialized ``columns``, nulls where a row has no
    value) with every row's stable row id and row commit version filled in: the materialized
    value when set, else ``baseRowId`` + the row's physical index (``row_index``) / the file's
    ``defaultRowCommitVersion`` (PROTOCOL.md "Reader Requirements for Row Tracking")."""
    if ids.base_row_id is None or ids.default_row_commit_version is None:
        raise CorruptLogError(
            f"{file} has no baseRowId/defaultRowCommitVersion although row tracking is enabled on the "
            "table, so its rows' ids are unknown; backfill row ids with Delta Spark before rewriting it",
            path=file)
    row_id, commit_version = columns
    fresh = pc.add(row_index, pa.scalar(ids.base_row_id, pa.int64()))
    filled = {
        row_id: pc.coalesce(chunk.column(row_id), fresh),
        commit_version: pc.coalesce(chunk.column(commit_version),
                                    pa.scalar(ids.default_row_commit_version, pa.int64())),
    }
    for name, values in filled.items():
        i = chunk.schema.get_field_index(name)
        chunk = chunk.set_column(i, chunk.schema.field(i), values)
    return chunk


def input_row_ids(snapshot: Snapshot, paths: Iterable[str]) -> dict[str, FileRowIds] | None:
    """``FileRowIds`` of the live files at ``paths`` (as in the log), for a rewrite that keeps
    rows' stable ids; None when the table has no stable ids to keep (row tracking not enabled)."""
    if not row_tracking_enabled(snapshot.protocol, snapshot.metadata.configuration):
        return None
    files = snapshot.file_columns("path", "base_row_id", "default_row_commit_version")
    files = files.filter(pc.is_in(files.column("path"), value_set=pa.array(sorted(set(paths)), pa.string())))
    return {p: FileRowIds(b, v) for p, b, v in zip(files.column("path").to_pylist(),
                                                    files.column("base_row_id").to_pylist(),
                                                    files.column("default_row_commit_version").to_pylist())}


def preserved_tags(protocol: Protocol, metadata: Metadata) -> dict[str, str]:
    """The commitInfo tags of a rewrite that kept every row's stable ids (Delta Spark's
    ``addPreservedRowTrackingTagIfNotSet``: only on tables with row tracking enabled)."""
    return {PRESERVED_TAG: "true"} if row_tracking_enabled(protocol, metadata.configuration) else {}
