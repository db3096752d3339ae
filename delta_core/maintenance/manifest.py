"""Symlink manifests for Hive/Presto/Athena readers (Delta's ``GENERATE symlink_format_manifest``).

Layout, as Delta writes it: ``_symlink_format_manifest/[<partition path>/]manifest``, one per
partition, listing the absolute URIs of that partition's live data files, one per line. The
partition path is the Hive-style directory of the partition values (``a=1/b=x``), escaped as
``delta_core.model.partition_values.partition_path`` does.

Each manifest is written whole with ``storage.write`` (readers see the old or the new file).
A full run writes every live partition's manifest and removes the manifests of partitions that
no longer exist. The incremental mode reads only the commits after the version recorded in
``_symlink_format_manifest/_delta_core_state.json`` (hidden from Hive readers by its leading
underscore) and rewrites only the partitions those commits touched; anything it cannot trust
(no state, another table id, changed partition columns or metadata, log already cleaned up)
falls back to a full run.

Like Delta, manifests are refused for tables with deletion vectors (a manifest cannot express
deleted rows) or column mapping (Hive readers would see physical names). Before anything, the
write gate (``table_features.check_write_supported``) must accept the table's protocol.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import (
    CorruptLogError,
    DeltaError,
    LogGapError,
    UnsupportedTableForOperationError,
    VersionNotFoundError,
)
from delta_core.maintenance.metrics import OperationMetrics, Stopwatch
from delta_core.model.actions import Add, Metadata, Remove
from delta_core.model.partition_values import partition_path, url_decode_path
from delta_core.model.table_features import check_write_supported
from delta_core.model.table_properties import ENABLE_DELETION_VECTORS

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable
    from delta_core.storage.base import Storage


log = logging.getLogger(__name__)

MANIFEST_DIR = "_symlink_format_manifest"
MANIFEST_NAME = "manifest"
STATE_KEY = f"{MANIFEST_DIR}/_delta_core_state.json"
WRITE_THREADS = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestMetrics(OperationMetrics):  # version: None, manifests never commit to the log
    snapshot_version: int
    mode: str  # "full" | "incremental" | "up_to_date"
    num_partitions: int
    manifests_written: int
    manifests_removed: int
    data_files_listed: int
    num_removed_files: int
    num_added_files: int
    removed_bytes: int
    added_bytes: int
    duration_seconds: float

    def outcome(self) -> str:
        return (f"manifests of version {self.snapshot_version} ({self.mode}): {self.manifests_written} written, "
                f"{self.manifests_removed} stale removed, {self.data_files_listed} data files listed")


def manifest_key(partition_dir: str) -> str:
    return f"{MANIFEST_DIR}/{partition_dir}/{MANIFEST_NAME}" if partition_dir else f"{MANIFEST_DIR}/{MANIFEST_NAME}"


def manifest_contents(
    files: pa.Table, partition_columns: Sequence[str], uri_of: Any,
) -> dict[str, bytes]:
    """``{partition dir: manifest bytes}`` for the live ``files`` (``path``, ``partition_values``).

    ``uri_of(path_in_log)`` gives a file's absolute URI. Pure. Lines are sorted so that
    rewriting an unchanged partition produces identical bytes.
    """
    paths = files.column("path")
    if not partition_columns:
        if files.num_rows == 0:
            return {}
        return {"": _encode(uri_of(p) for p in paths.to_pylist())}
    pv = files.column("partition_values")
    cols = {f"p{i}": pc.map_lookup(pv, pa.scalar(c, pa.string()), "first") if files.num_rows
            else pa.chunked_array([], pa.string()) for i, c in enumerate(partition_columns)}
    cols["path"] = paths
    grouped = pa.table(cols).group_by([f"p{i}" for i in range(len(partition_columns))]).aggregate(
        [("path", "list")]
    )
    out: dict[str, bytes] = {}
    key_lists = [grouped.column(f"p{i}").to_pylist() for i in range(len(partition_columns))]
    for row, members in enumerate(grouped.column("path_list").to_pylist()):
        values = {c: key_lists[i][row] for i, c in enumerate(partition_columns)}
        out[partition_path(partition_columns, values)] = _encode(uri_of(p) for p in members)
    return out


def _encode(uris: Iterable[str]) -> bytes:
    return ("\n".join(sorted(uris)) + "\n").encode("utf-8")


def touched_partitions(
    changes: Iterable[tuple[int, list[Any]]], partition_columns: Sequence[str],
) -> tuple[set[str], bool]:
    """Partition dirs touched by ``changes`` (``(version, actions)``), and whether a metadata
    change forces a full run."""
    dirs: set[str] = set()
    for _version, actions in changes:
        for action in actions:
            if isinstance(action, Metadata):
                return dirs, True
            if isinstance(action, (Add, Remove)):
                values: Mapping[str, str | None] = action.partition_values or {}
                if isinstance(action, Remove) and action.partition_values is None and partition_columns:
                    return dirs, True  # a remove without partition values: cannot tell where
                dirs.add(partition_path(partition_columns, values) if partition_columns else "")
    return dirs, False


def check_manifest_supported(snapshot: Snapshot) -> None:
    """Refuse tables with deletion vectors or column mapping, as Delta does."""
    uri = snapshot.storage.root
    mode = (snapshot.configuration.get("delta.columnMapping.mode") or "none").lower()
    if mode != "none":
        raise UnsupportedTableForOperationError(
            f"cannot generate symlink manifests for a table with column mapping (mode {mode}): Hive-style "
            "readers would see the physical column names. Read this table with a Delta-aware engine",
            path=uri, version=snapshot.version,
        )
    dv_enabled = str(snapshot.configuration.get(ENABLE_DELETION_VECTORS, "false")).lower() == "true"
    files = snapshot.file_columns("deletion_vector")
    with_dv = 0
    if "deletion_vector" in files.column_names and files.num_rows:
        with_dv = int(pc.sum(pc.is_valid(files.column("deletion_vector")).cast(pa.int64())).as_py() or 0)
    if dv_enabled or with_dv:
        raise UnsupportedTableForOperationError(
            "cannot generate symlink manifests for a table with deletion vectors: a manifest lists whole "
            "files and cannot hide deleted rows. Disable deletion vectors (delta.enableDeletionVectors=false) "
            "and purge them (Delta Spark: REORG TABLE ... APPLY (PURGE)) first",
            path=uri, version=snapshot.version,
        )


def _read_state(storage: Storage) -> dict[str, Any] | None:
    try:
        state = json.loads(storage.read(STATE_KEY))
    except FileNotFoundError:
        return None
    except (ValueError, DeltaError) as exc:
        log.warning("ignoring unreadable manifest state %s: %s", STATE_KEY, exc)
        return None
    return state if isinstance(state, dict) and isinstance(state.get("version"), int) else None


def manifest_state_version(storage: Storage, *, table_id: str) -> int | None:
    """The table version the manifests were last generated for (None: never, or for another
    table id); one read of the state file, no listing."""
    state = _read_state(storage)
    return state["version"] if state is not None and state.get("tableId") == table_id else None


def generate_manifests(table: DeltaTable, *, incremental: bool = False) -> ManifestMetrics:
    """Write the symlink manifests of ``table``'s latest snapshot."""
    watch = Stopwatch()
    snapshot = table.snapshot()
    # Manifests are written next to the log: a write, so the protocol gate applies first.
    check_write_supported(snapshot.protocol, snapshot.metadata, path=table.uri, version=snapshot.version)
    check_manifest_supported(snapshot)
    storage = table.storage
    partition_columns = list(snapshot.partition_columns)
    state = _read_state(storage) if incremental else None
    touched: set[str] | None = None
    mode = "full"
    if state is not None and state.get("tableId") == snapshot.metadata.id \
            and state.get("partitionColumns") == partition_columns:
        if state["version"] == snapshot.version:
            return _metrics(snapshot, "up_to_date", 0, 0, 0, 0, snapshot.num_files, watch)
        if state["version"] < snapshot.version:
            try:
                changes = [c for c in table.changes_since(state["version"]) if c[0] <= snapshot.version]
                dirs, full = touched_partitions(changes, partition_columns)
                if not full:
                    touched, mode = dirs, "incremental"
            except (VersionNotFoundError, LogGapError, CorruptLogError) as exc:
                log.info("manifest state at version %s unusable (%s); regenerating all", state["version"], exc)

    def uri_of(path: str) -> str:
        decoded = url_decode_path(path)
        return decoded if "://" in decoded else storage.uri(decoded)

    contents = manifest_contents(snapshot.file_columns("path", "partition_values"), partition_columns, uri_of)
    if touched is None:
        to_write = contents
        existing = {
            info.key for info in storage.list_recursive(MANIFEST_DIR)
            if info.key.endswith("/" + MANIFEST_NAME) or info.key == manifest_key("")
        }
        stale = sorted(existing - {manifest_key(d) for d in contents})
    else:
        to_write = {d: contents[d] for d in touched if d in contents}
        stale = sorted(manifest_key(d) for d in touched if d not in contents)
    written_bytes = sum(len(b) for b in to_write.values())
    with ThreadPoolExecutor(max_workers=WRITE_THREADS) as pool:
        list(pool.map(lambda item: storage.write(manifest_key(item[0]), item[1]), to_write.items()))
    storage.delete_many(stale)
    storage.write(STATE_KEY, json.dumps({
        "version": snapshot.version, "tableId": snapshot.metadata.id, "partitionColumns": partition_columns,
    }).encode())
    log.info("manifests of %s at version %s: %d written, %d removed (%s)",
             storage.root, snapshot.version, len(to_write), len(stale), mode)
    return _metrics(snapshot, mode, len(contents), len(to_write), len(stale), written_bytes,
                    snapshot.num_files, watch)


def _metrics(snapshot: Snapshot, mode: str, partitions: int, written: int, removed: int, written_bytes: int,
             listed: int, watch: Stopwatch) -> ManifestMetrics:
    return ManifestMetrics(
        version=None, snapshot_version=snapshot.version, mode=mode, num_partitions=partitions,
        manifests_written=written, manifests_removed=removed, data_files_listed=listed,
        num_removed_files=removed, num_added_files=written, removed_bytes=0, added_bytes=written_bytes,
        duration_seconds=watch.seconds(),
    )
