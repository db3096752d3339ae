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

The materialized row id / row commit version columns that preserve rows' stable ids through a
rewrite are read by ``delta_core.maintenance.row_tracking_columns``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence

from delta_core.errors import CorruptLogError, InvalidTransactionError
from delta_core.model.actions import Action, Add, DomainMetadata, Protocol
from delta_core.model.table_features import writer_features

ROW_TRACKING_DOMAIN = "delta.rowTracking"
HIGH_WATER_MARK_KEY = "rowIdHighWaterMark"
ENABLE_ROW_TRACKING = "delta.enableRowTracking"
ROW_TRACKING_SUSPENDED = "delta.rowTrackingSuspended"
MATERIALIZED_ROW_ID_COLUMN = "delta.rowTracking.materializedRowIdColumnName"
MATERIALIZED_ROW_COMMIT_VERSION_COLUMN = "delta.rowTracking.materializedRowCommitVersionColumnName"
PRESERVED_TAG = "delta.rowTracking.preserved"  # commitInfo tag, as Delta Spark writes it
NO_ROW_IDS = -1  # the mark of a table that never assigned a row id: the first id is 0


def _truthy(configuration: Mapping[str, str], key: str) -> bool:
    return str(configuration.get(key, "")).strip().lower() == "true"


def assigns_row_ids(protocol: Protocol, configuration: Mapping[str, str]) -> bool:
    """Whether commits must assign fresh row ids: supported and not suspended."""
    return "rowTracking" in writer_features(protocol) and not _truthy(configuration, ROW_TRACKING_SUSPENDED)


def row_tracking_enabled(protocol: Protocol, configuration: Mapping[str, str]) -> bool:
    """Whether rows' stable ids can be relied on, so that rewrites must preserve them."""
    return assigns_row_ids(protocol, configuration) and _truthy(configuration, ENABLE_ROW_TRACKING)


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
