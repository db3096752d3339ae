"""Typed errors of delta_core: one root, one branch per thing that can go wrong.

Every error carries the table ``path`` (or file path) and ``version`` it is about, when
known, and its message says what to do. ``kind`` is the stable machine-readable name used
by the CLI's ``--json`` error output (``not_a_table``, ``log_gap``, ...).
"""

from __future__ import annotations


class DeltaError(Exception):
    """Root of every error raised by delta_core."""

    kind = "delta_error"

    def __init__(self, message: str, *, path: str | None = None, version: int | None = None):
        super().__init__(message)
        self.path = path
        self.version = version


# --- reading the log ---------------------------------------------------------------------


class NotADeltaTableError(DeltaError):
    """The location has no ``_delta_log`` or the log holds no commit or checkpoint."""

    kind = "not_a_table"


class LogGapError(DeltaError):
    """A commit needed to reconstruct the requested version is missing."""

    kind = "log_gap"


class CorruptLogError(DeltaError):
    """Log content cannot be read: invalid JSON, unreadable checkpoint, bad field types."""

    kind = "corrupt_log"


class MissingProtocolError(DeltaError):
    """The reconstructed snapshot has no ``protocol`` action."""

    kind = "missing_protocol"


class MissingMetadataError(DeltaError):
    """The reconstructed snapshot has no ``metaData`` action."""

    kind = "missing_metadata"


class UnsupportedProtocolError(DeltaError):
    """The table needs a reader (or writer) version or feature this library does not support."""

    kind = "unsupported_protocol"


class UnsupportedWriterFeatureError(UnsupportedProtocolError):
    """Writing would need a writer version or feature this library does not implement."""


class VersionNotFoundError(DeltaError):
    """The requested version or timestamp is outside what the log can reconstruct."""

    kind = "version_not_found"


class TimestampAfterLatestCommitError(VersionNotFoundError):
    """A time-travel timestamp is later than the latest commit: no version is known to be
    current then (Delta Spark refuses it the same way); the message gives the latest commit's time."""

    kind = "timestamp_after_latest_commit"


class DeletionVectorError(DeltaError):
    """A deletion vector cannot be read or fails its checks (missing file, magic number, CRC,
    cardinality); ``path`` names its file. Nothing was written."""

    kind = "deletion_vector"


class CorruptVariantError(DeltaError):
    """A data file's variant column is not valid Variant encoding or shredding
    (apache/parquet-format ``VariantEncoding.md``, ``VariantShredding.md``). Nothing was written."""

    kind = "corrupt_variant"


# --- storage -----------------------------------------------------------------------------


class StorageError(DeltaError):
    """An IO operation failed (permissions, network, missing file that must exist)."""

    kind = "storage"


class AccessDeniedError(StorageError):
    """The OS or the object store denied access; ``access`` says which (``read``/``write``)."""

    kind = "permission_denied"

    def __init__(self, message: str, *, path: str | None = None, version: int | None = None,
                 access: str | None = None):
        super().__init__(message, path=path, version=version)
        self.access = access


class AtomicWriteUnsupportedError(StorageError):
    """The store has no atomic create-if-absent; committing would risk lost commits."""

    kind = "atomic_write_unsupported"


class UnsafeStoreError(AtomicWriteUnsupportedError):
    """An S3-compatible store accepted a second create-if-absent PUT: it ignores the condition."""

    kind = "unsafe_store"


class FileAlreadyExistsError(StorageError):
    """``put_if_absent`` found the file already there (another writer won)."""

    kind = "file_exists"


class BlockedPathError(StorageError):
    """A file stands where the table needs a directory (a write below it cannot succeed);
    ``path`` names that file. Nothing was written."""

    kind = "blocked_path"


class MissingDataFileError(StorageError):
    """A data file the log still references is not in storage (deleted outside the protocol)."""

    kind = "missing_data_file"


class RestoreFilesMissingError(MissingDataFileError):
    """A restore needs data or deletion vector files of the version it restores that storage no
    longer has (vacuumed, or deleted outside the log); nothing was written. ``missing`` names
    them (at most the first 100, as Delta Spark's ``RESTORE`` does)."""

    kind = "restore_files_missing"

    def __init__(self, message: str, *, missing: tuple[str, ...] = (), path: str | None = None,
                 version: int | None = None):
        super().__init__(message, path=path, version=version)
        self.missing = missing


class PathEscapesTableError(DeltaError):
    """A path would resolve outside the table root; nothing is read, written or deleted."""

    kind = "path_escapes_table"


class UnplaceablePathError(DeltaError):
    """A path the log still needs cannot be placed inside or outside the table root with
    certainty (another scheme or bucket that may alias the root's store, a ``..`` segment);
    ``path`` is that path. Operations that delete refuse and delete nothing."""

    kind = "unplaceable_path"


# --- writing -----------------------------------------------------------------------------


class InvalidTransactionError(DeltaError):
    """Staged actions break a protocol rule (duplicate paths, two metaData actions, ...)."""

    kind = "invalid_transaction"


class SchemaMismatchError(InvalidTransactionError):
    """Data does not match the table schema."""

    kind = "schema_mismatch"


class PartitionValueError(InvalidTransactionError):
    """A partition value is missing or cannot be serialised."""

    kind = "partition_value"


class AppendOnlyViolationError(InvalidTransactionError):
    """The table has ``delta.appendOnly=true`` and the transaction removes data."""

    kind = "append_only"


class CommitConflictError(DeltaError):
    """A concurrent commit conflicts with this transaction under Delta's rules."""

    kind = "commit_conflict"


class ProtocolChangedError(CommitConflictError):
    kind = "protocol_changed"


class MetadataChangedError(CommitConflictError):
    kind = "metadata_changed"


class ConcurrentTransactionError(CommitConflictError):
    """A concurrent commit wrote a ``txn`` for the same appId."""

    kind = "concurrent_transaction"


class ConcurrentAppendError(CommitConflictError):
    """A concurrent commit added files into data this transaction read."""

    kind = "concurrent_append"


class ConcurrentDeleteReadError(CommitConflictError):
    """A concurrent commit removed a file this transaction read."""

    kind = "concurrent_delete_read"


class ConcurrentDeleteDeleteError(CommitConflictError):
    """A concurrent commit removed a file this transaction also removes."""

    kind = "concurrent_delete_delete"


class CommitRetriesExhaustedError(DeltaError):
    """Retries or the time budget ran out while other writers kept winning."""

    kind = "commit_retries_exhausted"


class CommitStateUnknownError(DeltaError):
    """A commit's PUT may have landed but it cannot be told whether it did (a timeout or a
    dropped connection after the request was sent, an IO error on the hard link that creates
    the commit). ``version`` is the version it may hold. Nothing is cleaned up: the data files
    the commit references stay, since deleting them could corrupt a commit that did land."""

    kind = "commit_state_unknown"


# --- configuration and maintenance -------------------------------------------------------


class ConfigError(DeltaError):
    """A table property, CLI option or maintenance setting is invalid."""

    kind = "config"


class InventoryError(ConfigError):
    """A vacuum inventory cannot be used: missing, corrupt, of the wrong schema, for another
    bucket or prefix, or spelling its keys URL-encoded. Raised before anything is committed or
    deleted."""

    kind = "inventory"


class UsageError(ConfigError):
    """The command line itself is wrong: unknown option, missing or malformed argument."""

    kind = "usage"


class MaintenanceError(DeltaError):
    """A maintenance operation cannot run safely on this table."""

    kind = "maintenance"


class RewriteTaskError(MaintenanceError):
    """A Spark task failed; the message names the exception the executor raised."""

    kind = "task_failed"


class TaskOutOfMemoryError(RewriteTaskError):
    """A Spark task ran out of memory (Python ``MemoryError``, ``java.lang.OutOfMemoryError``, a
    container killed for its memory); the message says which memory settings to raise."""

    kind = "out_of_memory"


class RetentionTooShortError(MaintenanceError):
    """Vacuum retention below the table's ``delta.deletedFileRetentionDuration`` without force."""

    kind = "retention_too_short"


class UnsupportedTableForOperationError(MaintenanceError):
    """The table has a feature this operation cannot honour (e.g. manifests with DVs)."""

    kind = "unsupported_for_operation"


class MissingFieldIdsError(MaintenanceError):
    """A data file of a column mapping ``id``-mode table carries no Parquet field ids, so a
    rewrite cannot tell which table column each of its columns is."""

    kind = "missing_field_ids"


class RewriteVerificationError(InvalidTransactionError):
    """A ``dataChange=false`` rewrite's outputs do not hold what its inputs held (rows, null
    counts or value range of a column); nothing was committed. ``column`` and ``file`` name it."""

    kind = "rewrite_verification"

    def __init__(self, message: str, *, column: str | None = None, file: str | None = None,
                 path: str | None = None, version: int | None = None):
        super().__init__(message, path=path, version=version)
        self.column = column
        self.file = file


class VacuumLiteUnavailableError(MaintenanceError):
    """Vacuum lite cannot know every expired file from the log (commits it needs were cleaned
    up, or no ``_last_vacuum_info`` and the log no longer starts at 0): run a full vacuum."""

    kind = "vacuum_lite_unavailable"


class VacuumIncompleteError(MaintenanceError):
    """Some planned deletes of a vacuum failed: ``VACUUM END`` was committed with status
    ``FAILED`` and the counts so far. Fix the cause (permissions, a directory where a file was
    expected) and run the vacuum again: it plans what is left."""

    kind = "vacuum_incomplete"


class RestoreBeyondRetentionError(MaintenanceError):
    """The version to restore was committed before the table's ``delta.deletedFileRetentionDuration``:
    vacuum may delete its files while the restore commits, so Delta Spark refuses it and so do we."""

    kind = "restore_beyond_retention"
