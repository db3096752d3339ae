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


# --- storage -----------------------------------------------------------------------------


class StorageError(DeltaError):
    """An IO operation failed (permissions, network, missing file that must exist)."""

    kind = "storage"


class AtomicWriteUnsupportedError(StorageError):
    """The store has no atomic create-if-absent; committing would risk lost commits."""

    kind = "atomic_write_unsupported"


class FileAlreadyExistsError(StorageError):
    """``put_if_absent`` found the file already there (another writer won)."""

    kind = "file_exists"


class MissingDataFileError(StorageError):
    """A data file the log still references is not in storage (deleted outside the protocol)."""

    kind = "missing_data_file"


class PathEscapesTableError(DeltaError):
    """A path would resolve outside the table root; nothing is read, written or deleted."""

    kind = "path_escapes_table"


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


# --- configuration and maintenance -------------------------------------------------------


class ConfigError(DeltaError):
    """A table property, CLI option or maintenance setting is invalid."""

    kind = "config"


class MaintenanceError(DeltaError):
    """A maintenance operation cannot run safely on this table."""

    kind = "maintenance"


class RetentionTooShortError(MaintenanceError):
    """Vacuum retention below the table's ``delta.deletedFileRetentionDuration`` without force."""

    kind = "retention_too_short"


class UnsupportedTableForOperationError(MaintenanceError):
    """The table has a feature this operation cannot honour (e.g. manifests with DVs)."""

    kind = "unsupported_for_operation"
