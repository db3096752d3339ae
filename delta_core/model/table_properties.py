"""Table properties (``metaData.configuration``) as named keys with typed parsers.

Keys and defaults follow Delta Lake (PROTOCOL.md and Delta Spark's DeltaConfigs). Values are
strings in the log; each accessor parses and validates, raising ``ConfigError`` that names the
key and the bad value.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping

from delta_core.errors import ConfigError

APPEND_ONLY = "delta.appendOnly"
CHECKPOINT_INTERVAL = "delta.checkpointInterval"
CHECKPOINT_WRITE_STATS_AS_JSON = "delta.checkpoint.writeStatsAsJson"
CHECKPOINT_WRITE_STATS_AS_STRUCT = "delta.checkpoint.writeStatsAsStruct"
DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"
LOG_RETENTION = "delta.logRetentionDuration"
SET_TRANSACTION_RETENTION = "delta.setTransactionRetentionDuration"
TARGET_FILE_SIZE = "delta.targetFileSize"
ENABLE_DELETION_VECTORS = "delta.enableDeletionVectors"
COLUMN_MAPPING_MODE = "delta.columnMapping.mode"
ENABLE_IN_COMMIT_TIMESTAMPS = "delta.enableInCommitTimestamps"
ENABLE_EXPIRED_LOG_CLEANUP = "delta.enableExpiredLogCleanup"
REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION = "delta.requireCheckpointProtectionBeforeVersion"
DATA_SKIPPING_NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
DATA_SKIPPING_STATS_COLUMNS = "delta.dataSkippingStatsColumns"
ENABLE_ROW_TRACKING = "delta.enableRowTracking"
ROW_TRACKING_SUSPENDED = "delta.rowTrackingSuspended"
MATERIALIZED_ROW_ID_COLUMN = "delta.rowTracking.materializedRowIdColumnName"
MATERIALIZED_ROW_COMMIT_VERSION_COLUMN = "delta.rowTracking.materializedRowCommitVersionColumnName"
WRITE_PARTITION_COLUMNS_TO_PARQUET = "delta.writePartitionColumnsToParquet"

DEFAULT_CHECKPOINT_INTERVAL = 10
DEFAULT_DELETED_FILE_RETENTION = dt.timedelta(days=7)
DEFAULT_LOG_RETENTION = dt.timedelta(days=30)
DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024
DEFAULT_NUM_INDEXED_COLS = 32

_UNITS = {
    "nanosecond": 1e-9, "microsecond": 1e-6, "millisecond": 1e-3, "second": 1.0,
    "minute": 60.0, "hour": 3600.0, "day": 86400.0, "week": 604800.0,
}
_INTERVAL = re.compile(r"^\s*(?:interval\s+)?(-?\d+)\s+([a-z]+?)s?\s*$", re.IGNORECASE)


def parse_interval(value: str, *, key: str = "interval") -> dt.timedelta:
    """Parse Delta's ``interval 7 days`` (also ``7 days``, ``1 hour``) into a timedelta."""
    m = _INTERVAL.match(value or "")
    unit = m[2].lower() if m else ""
    if not m or unit not in _UNITS:
        raise ConfigError(
            f"{key}={value!r} is not an interval; write it like 'interval 7 days' "
            f"(units: {', '.join(u + 's' for u in _UNITS)})"
        )
    seconds = int(m[1]) * _UNITS[unit]
    if seconds < 0:
        raise ConfigError(f"{key}={value!r} must not be negative")
    return dt.timedelta(seconds=seconds)


def parse_bool(value: str, *, key: str) -> bool:
    v = (value or "").strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise ConfigError(f"{key}={value!r} must be 'true' or 'false'")


def parse_positive_int(value: str, *, key: str) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise ConfigError(f"{key}={value!r} must be a whole number") from None
    if n <= 0:
        raise ConfigError(f"{key}={value!r} must be greater than zero")
    return n


class TableProperties:
    """Typed view over a table's ``configuration`` map."""

    __slots__ = ("_conf",)

    def __init__(self, configuration: Mapping[str, str] | None):
        self._conf = dict(configuration or {})

    def raw(self, key: str) -> str | None:
        return self._conf.get(key)

    def _interval(self, key: str, default: dt.timedelta) -> dt.timedelta:
        v = self._conf.get(key)
        return default if v is None else parse_interval(v, key=key)

    def _bool(self, key: str, default: bool) -> bool:
        v = self._conf.get(key)
        return default if v is None else parse_bool(v, key=key)

    @property
    def append_only(self) -> bool:
        return self._bool(APPEND_ONLY, False)

    @property
    def checkpoint_interval(self) -> int:
        v = self._conf.get(CHECKPOINT_INTERVAL)
        return DEFAULT_CHECKPOINT_INTERVAL if v is None else parse_positive_int(v, key=CHECKPOINT_INTERVAL)

    @property
    def checkpoint_write_stats_as_json(self) -> bool:
        return self._bool(CHECKPOINT_WRITE_STATS_AS_JSON, True)

    @property
    def checkpoint_write_stats_as_struct(self) -> bool:
        # True as in Delta Spark: readers (and our health and plans) take typed statistics from
        # the checkpoint instead of parsing every file's JSON.
        return self._bool(CHECKPOINT_WRITE_STATS_AS_STRUCT, True)

    @property
    def deleted_file_retention(self) -> dt.timedelta:
        return self._interval(DELETED_FILE_RETENTION, DEFAULT_DELETED_FILE_RETENTION)

    @property
    def log_retention(self) -> dt.timedelta:
        return self._interval(LOG_RETENTION, DEFAULT_LOG_RETENTION)

    @property
    def set_transaction_retention(self) -> dt.timedelta | None:
        v = self._conf.get(SET_TRANSACTION_RETENTION)
        return None if v is None else parse_interval(v, key=SET_TRANSACTION_RETENTION)

    @property
    def target_file_size(self) -> int:
        v = self._conf.get(TARGET_FILE_SIZE)
        return DEFAULT_TARGET_FILE_SIZE if v is None else parse_positive_int(v, key=TARGET_FILE_SIZE)

    @property
    def column_mapping_mode(self) -> str:
        mode = (self._conf.get(COLUMN_MAPPING_MODE) or "none").lower()
        if mode not in ("none", "id", "name"):
            raise ConfigError(f"{COLUMN_MAPPING_MODE}={mode!r} must be none, id or name")
        return mode

    @property
    def in_commit_timestamps(self) -> bool:
        return self._bool(ENABLE_IN_COMMIT_TIMESTAMPS, False)

    @property
    def expired_log_cleanup(self) -> bool:
        return self._bool(ENABLE_EXPIRED_LOG_CLEANUP, True)

    @property
    def require_checkpoint_protection_before_version(self) -> int:
        """Checkpoints below this version are protected (0: none); see checkpoint_protection."""
        key = REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION
        v = self._conf.get(key)
        return 0 if v is None or str(v).strip() == "0" else parse_positive_int(v, key=key)

    @property
    def num_indexed_cols(self) -> int:
        v = self._conf.get(DATA_SKIPPING_NUM_INDEXED_COLS)
        if v is None:
            return DEFAULT_NUM_INDEXED_COLS
        try:
            n = int(v)
        except ValueError:
            raise ConfigError(f"{DATA_SKIPPING_NUM_INDEXED_COLS}={v!r} must be a whole number") from None
        return n  # -1 means all columns

    @property
    def stats_columns(self) -> tuple[str, ...] | None:
        v = self._conf.get(DATA_SKIPPING_STATS_COLUMNS)
        return None if v is None else tuple(c.strip() for c in v.split(",") if c.strip())

    @property
    def row_tracking_enabled(self) -> bool:
        return self._bool(ENABLE_ROW_TRACKING, False)

    @property
    def row_tracking_suspended(self) -> bool:
        return self._bool(ROW_TRACKING_SUSPENDED, False)

    @property
    def write_partition_columns(self) -> bool:
        """New data files should hold the partition columns (see ``write.materialized_partitions``)."""
        return self._bool(WRITE_PARTITION_COLUMNS_TO_PARQUET, False)
