"""Table-level write operations: create, append, overwrite, delete files, set properties,
rewrite (PROTOCOL.md "Change Metadata", "Protocol Evolution", "Add File and Remove File",
"Transaction Identifiers", "Column Mapping", "Table Features").

Each operation checks everything it can *before* writing data (writer features, schema,
partition values, appendOnly), then writes data files through ``data_writer`` and commits one
``Transaction``. A failure before the commit deletes the files it wrote.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from delta_core.errors import (
    AppendOnlyViolationError,
    ConfigError,
    InvalidTransactionError,
    PartitionValueError,
    SchemaMismatchError,
)
from delta_core.log.file_actions import iter_adds
from delta_core.log.log_path import LOG_DIR
from delta_core.log.table import DeltaTable
from delta_core.model.actions import Add, Metadata, Protocol
from delta_core.model.clock import Clock, system_clock
from delta_core.model.clustering import clustering_columns, columns_without_stats, is_clustered_table
from delta_core.model.delta_operations import CREATE_TABLE, DELETE, OPTIMIZE, SET_TBLPROPERTIES, WRITE
from delta_core.model.schema import (
    FIELD_ID_KEY,
    PHYSICAL_NAME_KEY,
    DataType,
    PrimitiveType,
    StructField,
    StructType,
    contains_type,
    map_fields,
    schema_from_arrow,
)
from delta_core.model.table_features import check_write_supported
from delta_core.model.table_properties import (
    APPEND_ONLY,
    COLUMN_MAPPING_MODE,
    TableProperties,
)
from delta_core.storage import open_storage
from delta_core.write.commit_info import CommitInfoFields
from delta_core.write.commit_outcome import CommitResult
from delta_core.write.constraints import check_constraints_added, check_new_rows_allowed
from delta_core.write.data_writer import conform_to_schema, write_table_data
from delta_core.write.feature_enablement import protocol_for, required_features, upgrade_protocol
from delta_core.write.materialized_partitions import stores_partition_columns
from delta_core.write.operation_records import (
    CreateTableParameters,
    DeleteMetrics,
    DeleteParameters,
    RewriteMetrics,
    SetPropertiesParameters,
    WriteMetrics,
    WriteParameters,
)
from delta_core.write.rewrite_proof import InputSummary, verify_rewrite
from delta_core.write.transaction import Transaction

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.storage.base import Storage

MAX_COLUMN_ID_KEY = "delta.columnMapping.maxColumnId"


def _as_table(data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    try:
        return pa.Table.from_batches(list(data))
    except (TypeError, pa.ArrowInvalid) as exc:
        raise SchemaMismatchError(f"data must be a pyarrow Table or record batches: {exc}") from exc


# --- create ------------------------------------------------------------------------------


def _is_ntz(t: DataType) -> bool:
    return isinstance(t, PrimitiveType) and t.name == "timestamp_ntz"


def _assign_column_mapping(struct: StructType) -> tuple[StructType, int]:
    """Give every (nested) field an id and a fresh physical name (PROTOCOL.md "Column Mapping")."""
    next_id = 0

    def assign(f: StructField) -> StructField:
        nonlocal next_id
        next_id += 1
        return replace(f, metadata={**f.metadata, FIELD_ID_KEY: next_id, PHYSICAL_NAME_KEY: f"col-{uuid.uuid4()}"})

    return map_fields(struct, assign), next_id  # type: ignore[return-value]


def initial_protocol(struct: StructType, configuration: Mapping[str, str], *, path: str | None = None) -> Protocol:
    """The smallest protocol that supports the schema and properties of a new table: Delta's
    default (1, 2) upgraded for the schema's features and those the properties turn on."""
    features = set(required_features(configuration, path=path, version=0))
    if TableProperties(configuration).column_mapping_mode != "none":
        features.add("columnMapping")
    if contains_type(struct, _is_ntz):
        features.add("timestampNtz")
    return upgrade_protocol(Protocol(1, 2), features)


def create_table(
    uri: str,
    schema: pa.Schema,
    *,
    partition_columns: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    name: str | None = None,
    description: str | None = None,
    storage: Storage | None = None,
    clock: Clock = system_clock,
) -> DeltaTable:
    """Create an empty table at ``uri`` (version 0: protocol + metaData); the returned table
    keeps ``clock``."""
    configuration = {k: str(v) for k, v in (properties or {}).items()}
    props = TableProperties(configuration)
    # Parse every typed property now: a bad value must fail before the table exists.
    for attr in ("append_only", "checkpoint_interval", "deleted_file_retention", "log_retention",
                 "set_transaction_retention", "target_file_size", "column_mapping_mode",
                 "checkpoint_write_stats_as_struct", "checkpoint_write_stats_as_json"):
        getattr(props, attr)
    struct = schema_from_arrow(schema)
    for col in partition_columns:
        f = struct.get(col)
        if f is None:
            raise PartitionValueError(f"partition column {col!r} is not in the schema {struct.field_names}")
        if not isinstance(f.type, PrimitiveType):
            raise PartitionValueError(f"partition column {col!r} must have a primitive type, not {f.type}")
    if len(set(partition_columns)) != len(partition_columns):
        raise PartitionValueError(f"partition columns repeat: {list(partition_columns)}")
    if len(partition_columns) == len(struct.fields) and struct.fields:
        raise PartitionValueError("a table needs at least one column that is not a partition column")
    if props.column_mapping_mode != "none":
        struct, max_id = _assign_column_mapping(struct)
        configuration[MAX_COLUMN_ID_KEY] = str(max_id)
    protocol = initial_protocol(struct, configuration, path=uri)
    metadata = Metadata(
        id=str(uuid.uuid4()),
        schema_string=struct.to_json(),
        partition_columns=tuple(partition_columns),
        configuration=configuration,
        name=name,
        description=description,
        created_time=clock(),
    )
    if storage is None:
        storage = open_storage(uri, storage_options)
    if any(True for _ in storage.list_from(LOG_DIR)):
        raise InvalidTransactionError(f"{uri} already holds a Delta log; open it with DeltaTable instead",
                                      path=uri)
    table = DeltaTable(uri, storage_options, storage=storage, clock=clock)
    txn = Transaction(table, new_table=True, operation=CREATE_TABLE, operation_parameters=CreateTableParameters(
        partition_by=tuple(partition_columns), properties=configuration, description=description))
    txn.add_actions([protocol, metadata])
    txn.commit(checkpoint=False)
    return table


# --- data writes -------------------------------------------------------------------------


def _check_writable(txn: Transaction, *, removes_data: bool) -> None:
    snap = txn.snapshot
    check_write_supported(snap.protocol, snap.metadata, path=txn.table.uri, version=snap.version)
    check_new_rows_allowed(snap.metadata.configuration, path=txn.table.uri, version=snap.version)
    if removes_data and snap.properties.append_only:
        raise AppendOnlyViolationError(
            f"{txn.table.uri} has {APPEND_ONLY}=true: data cannot be removed or overwritten; "
            "only appends (and dataChange=false rewrites) are allowed",
            path=txn.table.uri, version=snap.version)


def _write_metrics(adds: Sequence[Add], rows: int, *, removed: int | None = None) -> WriteMetrics:
    return WriteMetrics(num_files=len(adds), num_output_rows=rows, num_output_bytes=sum(a.size for a in adds),
                        num_removed_files=removed)


def append(
    table: DeltaTable,
    data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch],
    *,
    app_id: str | None = None,
    app_version: int | None = None,
    target_file_size: int | None = None,
    read_snapshot: Snapshot | None = None,
) -> CommitResult:
    """Append rows as new files. With ``app_id``/``app_version`` the write is idempotent:
    if the table already records that appId at ``app_version`` or later, nothing is written."""
    if (app_id is None) != (app_version is None):
        raise InvalidTransactionError("pass both app_id and app_version, or neither")
    snap = read_snapshot if read_snapshot is not None else table.snapshot()
    txn = Transaction(table, read_snapshot=snap, operation=WRITE,
                      operation_parameters=WriteParameters(mode="Append", partition_by=tuple(snap.partition_columns)))
    if app_id is not None:
        seen = snap.txns.get(app_id)
        if seen is not None and seen.version >= int(app_version):  # type: ignore[arg-type]
            return CommitResult(version=snap.version, attempts=0, skipped=True)
    _check_writable(txn, removes_data=False)
    table_data = _as_table(data)
    conform_to_schema(table_data, snap.metadata)  # refuse bad data before writing any file
    with txn:
        adds = write_table_data(table.storage, table_data, metadata=snap.metadata,
                                target_file_size=target_file_size, on_file=txn.track_written_file,
                                partition_columns=stores_partition_columns(snap.protocol, snap.metadata))
        txn.add_actions(adds)
        if app_id is not None:
            txn.set_app_transaction(app_id, int(app_version))  # type: ignore[arg-type]
        txn.set_operation_metrics(_write_metrics(adds, table_data.num_rows))
        return txn.commit()


def overwrite(
    table: DeltaTable,
    data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch],
    *,
    target_file_size: int | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
) -> CommitResult:
    """Replace every file of the table with ``data`` (one commit: removes + adds)."""
    txn = Transaction(table, operation=WRITE, operation_parameters=WriteParameters(mode="Overwrite"))
    snap = txn.snapshot
    if app_id is not None:
        seen = snap.txns.get(app_id)
        if seen is not None and app_version is not None and seen.version >= int(app_version):
            return CommitResult(version=snap.version, attempts=0, skipped=True)
    _check_writable(txn, removes_data=True)
    table_data = _as_table(data)
    conform_to_schema(table_data, snap.metadata)
    txn.read_whole_table()
    now = table.clock()
    removes = [a.to_remove(now) for a in snap.add_actions()]
    with txn:
        adds = write_table_data(table.storage, table_data, metadata=snap.metadata,
                                target_file_size=target_file_size, on_file=txn.track_written_file,
                                partition_columns=stores_partition_columns(snap.protocol, snap.metadata))
        txn.add_actions(removes)
        txn.add_actions(adds)
        if app_id is not None and app_version is not None:
            txn.set_app_transaction(app_id, int(app_version))
        txn.set_operation_metrics(_write_metrics(adds, table_data.num_rows, removed=len(removes)))
        return txn.commit()


def delete_files(
    table: DeltaTable, paths: Iterable[str], *, read_snapshot: Snapshot | None = None
) -> CommitResult:
    """Logically delete whole files (``remove`` with ``dataChange=true``) by their log path."""
    txn = Transaction(table, read_snapshot=read_snapshot, operation=DELETE,
                      operation_parameters=DeleteParameters())
    _check_writable(txn, removes_data=True)
    wanted = list(dict.fromkeys(paths))
    live = {a.path: a for a in iter_adds(txn.snapshot.files_of(wanted))}
    missing = [p for p in wanted if p not in live]
    if missing:
        raise InvalidTransactionError(
            f"{len(missing)} file(s) are not in version {txn.snapshot.version} of the table, e.g. "
            f"{missing[0]!r}; pass paths exactly as they appear in add.path",
            path=table.uri, version=txn.snapshot.version)
    now = table.clock()
    txn.add_actions(live[p].to_remove(now) for p in wanted)
    txn.set_operation_metrics(DeleteMetrics(
        num_removed_files=len(wanted),
        num_deleted_rows=sum(json.loads(live[p].stats or "{}").get("numRecords", 0) for p in wanted),
    ))
    return txn.commit()


def set_properties(table: DeltaTable, properties: Mapping[str, str]) -> CommitResult:
    """Merge ``properties`` into ``metaData.configuration`` (upgrading the protocol if needed)."""
    txn = Transaction(table, operation=SET_TBLPROPERTIES,
                      operation_parameters=SetPropertiesParameters(properties=dict(properties)))
    snap = txn.snapshot
    # A metadata-only commit adds no rows, so row constraints cannot stop it (rewrite_only).
    check_write_supported(snap.protocol, snap.metadata, rewrite_only=True, path=table.uri,
                          version=snap.version)
    configuration = dict(snap.metadata.configuration)
    configuration.update({k: str(v) for k, v in properties.items()})
    if COLUMN_MAPPING_MODE in properties and TableProperties(configuration).column_mapping_mode != \
            snap.properties.column_mapping_mode:
        raise InvalidTransactionError("changing delta.columnMapping.mode on an existing table is not "
                                      "supported", path=table.uri, version=snap.version)
    props = TableProperties(configuration)
    for attr in ("append_only", "checkpoint_interval", "deleted_file_retention", "log_retention",
                 "set_transaction_retention", "target_file_size",
                 "checkpoint_write_stats_as_struct", "checkpoint_write_stats_as_json"):
        getattr(props, attr)
    _check_clustering_keeps_stats(snap, props, path=table.uri)
    protocol = protocol_for(snap.protocol, snap.metadata.configuration, configuration,
                            path=table.uri, version=snap.version)
    check_constraints_added(snap.metadata.configuration, configuration, live_files=snap.num_files,
                            path=table.uri, version=snap.version)
    txn.add_action(replace(snap.metadata, configuration=configuration))
    if protocol != snap.protocol:
        txn.add_action(protocol)
    return txn.commit()


def _check_clustering_keeps_stats(snap: Snapshot, props: TableProperties, *, path: str) -> None:
    """PROTOCOL.md "Clustered Table": every ``add`` must have stats for the clustering columns,
    so stats settings that would leave one out are refused before anything is written."""
    if not is_clustered_table(snap.protocol):
        return
    columns = clustering_columns(snap.domain_metadata, snap.schema, path=path, version=snap.version)
    missing = columns_without_stats(snap.schema, columns, partition_columns=snap.partition_columns,
                                    num_indexed_cols=props.num_indexed_cols, stats_columns=props.stats_columns)
    if missing:
        raise ConfigError(
            f"these settings would stop statistics on clustering column(s) {', '.join(c.name for c in missing)}, "
            "which a clustered table must have in every file; keep them among the indexed columns "
            "(delta.dataSkippingNumIndexedCols / delta.dataSkippingStatsColumns) or change the clustering "
            "columns first (delta-core cluster-by)", path=path, version=snap.version)


def commit_rewrite(
    table: DeltaTable,
    *,
    removed: Sequence[Add],
    added: Sequence[Add],
    operation: str = OPTIMIZE,
    operation_parameters: CommitInfoFields | None = None,
    read_snapshot: Snapshot | None = None,
    metrics: CommitInfoFields | None = None,
    discard_on_failure: bool = True,
    input_summaries: Sequence[InputSummary] = (),
    tags: Mapping[str, str] | None = None,
) -> CommitResult:
    """Commit a ``dataChange=false`` rewrite: ``removed`` files replaced by ``added`` ones
    (``tags``: the commitInfo's, e.g. ``row_tracking.preserved_tags``).

    The removed files are declared read, so a concurrent delete of any of them is a
    ``ConcurrentDeleteReadError``; concurrent appends do not conflict (SnapshotIsolation).
    ``added`` files must already be written (e.g. ``write_data_file(..., data_change=False)``);
    they are deleted again if the commit surely fails, unless ``discard_on_failure=False``
    (a caller that retries on a newer snapshot keeps them and cleans up itself).

    Before anything is committed, ``rewrite_proof.verify_rewrite`` proves the outputs hold what
    the inputs held (rows, null counts, value ranges per column; ``input_summaries`` stand for
    inputs whose own stats cannot), else ``RewriteVerificationError``.
    """
    txn = Transaction(table, read_snapshot=read_snapshot, operation=operation,
                      operation_parameters=operation_parameters)
    now = table.clock()
    txn.mark_files_read(a.path for a in removed)
    with txn:
        if discard_on_failure:
            for a in added:
                txn.track_written_file(a)  # a failed proof deletes them too
        verify_rewrite(removed, added, metadata=txn.snapshot.metadata, summaries=input_summaries,
                       table=table.uri, version=txn.snapshot.version)
        txn.add_actions(a.to_remove(now, data_change=False) for a in removed)
        outputs = [replace(a, data_change=False) for a in added]
        txn.add_actions(outputs)
        txn.set_commit_tags(tags or {})
        txn.set_operation_metrics(metrics or RewriteMetrics(
            num_removed_files=len(removed), num_added_files=len(added),
            num_removed_bytes=sum(a.size for a in removed), num_added_bytes=sum(a.size for a in added),
        ))
        return txn.commit()
