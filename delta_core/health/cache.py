"""The health cache: one table version's health figures (``version_figures.VersionHealth``) kept in
files, so a later evaluation of the same version, in any process, skips the log replay.

Health runs on every sensor tick, check run and advisor tick, each a separate process or
evaluation, so an in-process cache would be empty every time. The cache is a directory reached
through ``delta_core.storage`` (a local path or any fsspec URI), not the Dagster instance's
key-value store: entries are written and read by the library and the CLI too, need no database
round trip or lock (each is one file, written whole), and live beside the instance's storage when
Dagster runs them (``DELTA_HEALTH_CACHE``, else the instance's storage directory).

An entry is keyed by everything its figures follow from: the table URI, the version and the
identity (name, size, modification time) of the last log file of its segment, so a table
re-created at the same path misses; the health policy; the columns asked for; and ``FORMAT``,
bumped whenever the figures' meaning changes. A new version is a new key, so an entry is never
wrong after the table changes. Writing an entry removes the table's entries of older versions.

A second kind of entry serves the next versions: which rows of a checkpoint have stats covering
the table's stats columns, and each row's ``numRecords`` (``checkpoint_coverage``), keyed by the
checkpoint files' identity and those columns, so a version after the same checkpoint reads no
stats of the checkpoint, only those of the commits since (the checkpoint's are most of the cost
of a replay).

An entry that cannot be read or parsed, or whose key differs, is ignored (logged) and recomputed;
a cache that cannot be written costs only the next evaluation's replay. See docs/scaling.md.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from delta_core.errors import DeltaError
from delta_core.health.policy import HealthPolicy
from delta_core.health.version_figures import VersionHealth
from delta_core.log.log_segment import LogSegment
from delta_core.model.stats import StatsColumn
from delta_core.storage import open_storage
from delta_core.storage.base import Storage

log = logging.getLogger(__name__)

FORMAT = 2  # bump when what an entry holds, or how a figure is computed, changes
CACHE_ENV = "DELTA_HEALTH_CACHE"  # a directory or URI: where health evaluations keep their figures
_DIGEST = 24  # hex digits of a key's SHA-256 in file names
CHECKPOINT_PREFIX = "checkpoint-"  # names of checkpoint entries; version entries start with the version


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_DIGEST]


def _entry_key(table: str, prefix: str, version: int, document: dict[str, Any], suffix: str) -> str:
    """``<table digest>/<prefix><version>-<document digest><suffix>``: a table's entries share a
    directory, and their names sort by version."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return f"{_digest(table)}/{prefix}{version:020d}-{_digest(text)}{suffix}"


@dataclass(frozen=True, slots=True)
class CacheKey:
    """What a version's health figures follow from (module docstring)."""

    table: str
    version: int
    log_file: tuple[str, int, int]  # key, size, modification time of the segment's last file
    policy: HealthPolicy
    columns: tuple[str, ...] | None

    @classmethod
    def of(cls, table: str, segment: LogSegment, *, policy: HealthPolicy,
           columns: Sequence[str] | None) -> CacheKey:
        last = segment.files[-1]
        return cls(table, segment.version, (last.key, last.size, last.modification_time), policy,
                   None if columns is None else tuple(columns))

    def document(self) -> dict[str, Any]:
        return {"format": FORMAT, "table": self.table, "version": self.version, "log_file": list(self.log_file),
                "policy": dataclasses.asdict(self.policy),
                "columns": None if self.columns is None else list(self.columns)}

    @property
    def file_key(self) -> str:
        return _entry_key(self.table, "", self.version, self.document(), ".json")


@dataclass(frozen=True, slots=True)
class CheckpointKey:
    """What a checkpoint's rows' stats coverage follows from: the table, the checkpoint files
    (key, size, modification time each) and the stats columns judged (logical and physical
    path, type)."""

    table: str
    version: int
    files: tuple[tuple[str, int, int], ...]
    columns: tuple[tuple[str, str, str], ...]

    @classmethod
    def of(cls, table: str, segment: LogSegment, columns: Sequence[StatsColumn]) -> CheckpointKey:
        assert segment.checkpoint_version is not None  # only rows read from a checkpoint are kept
        return cls(table, segment.checkpoint_version,
                   tuple((f.key, f.size, f.modification_time) for f in segment.checkpoint_files),
                   tuple((".".join(c.logical), ".".join(c.physical), repr(c.type)) for c in columns))

    def document(self) -> dict[str, Any]:
        return {"format": FORMAT, "table": self.table, "checkpoint_version": self.version,
                "files": [list(f) for f in self.files], "columns": [list(c) for c in self.columns]}

    @property
    def file_key(self) -> str:
        return _entry_key(self.table, CHECKPOINT_PREFIX, self.version, self.document(), ".bits")


@dataclass(frozen=True, slots=True)
class CheckpointCoverage:
    """Per checkpoint ``add`` row (by ordinal): whether its coverage is known, whether its stats
    cover the columns, and (when read) its ``numRecords``: ``counted`` says which rows have one
    (any int64 is a count the reader may give, so none can stand for "none")."""

    known: np.ndarray
    covered: np.ndarray
    records: np.ndarray | None = None  # int64, every row of the checkpoint
    counted: np.ndarray | None = None  # bool, with ``records``

    def encode(self, key: CheckpointKey) -> bytes:
        head = json.dumps({"key": key.document(), "rows": len(self.known), "records": self.records is not None},
                          separators=(",", ":"))
        bits = np.packbits(self.known).tobytes() + np.packbits(self.covered).tobytes()
        if self.records is not None:
            assert self.counted is not None  # both or neither
            bits += np.packbits(self.counted).tobytes() + self.records.astype("<i8").tobytes()
        return head.encode("utf-8") + b"\n" + zlib.compress(bits, 1)  # fast: 80 MB of counts at 10M files

    @classmethod
    def decode(cls, data: bytes, key: CheckpointKey) -> CheckpointCoverage:
        """``ValueError``/``KeyError``/``TypeError`` (``zlib.error`` is one) unless ``data`` is
        an entry of ``key``."""
        head, _, body = data.partition(b"\n")
        doc = json.loads(head)
        if doc["key"] != json.loads(json.dumps(key.document())):
            raise ValueError("the entry's key differs from the one asked for")
        rows, with_records = int(doc["rows"]), doc["records"]
        if not isinstance(with_records, bool):
            raise TypeError("records is not a boolean")
        bits = np.frombuffer(zlib.decompress(body), dtype=np.uint8)
        size = (rows + 7) // 8
        if len(bits) != 2 * size + (size + 8 * rows if with_records else 0):
            raise ValueError(f"{len(bits)} bytes for {rows} rows")
        records = bits[3 * size:].view("<i8").astype(np.int64) if with_records else None
        counted = np.unpackbits(bits[2 * size:3 * size], count=rows).astype(bool) if with_records else None
        return cls(np.unpackbits(bits[:size], count=rows).astype(bool),
                   np.unpackbits(bits[size:2 * size], count=rows).astype(bool), records, counted)


class HealthCache:
    """Health figures per table version in the files under ``storage``'s root."""

    def __init__(self, storage: Storage):
        self._storage = storage

    @property
    def uri(self) -> str:
        return self._storage.root

    def load(self, key: CacheKey) -> VersionHealth | None:
        """The figures stored under ``key``; None when there are none or they are unusable."""
        try:
            data = self._storage.read(key.file_key)
        except FileNotFoundError:
            return None
        except (DeltaError, OSError) as exc:  # any failure of an optional cache: replay instead
            log.warning("health cache %s: cannot read %s (%s); recomputing", self.uri, key.file_key, exc)
            return None
        try:
            entry = json.loads(data)
            if entry["key"] != json.loads(json.dumps(key.document())):
                raise ValueError("the entry's key differs from the one asked for")
            found = VersionHealth.from_json(entry["health"])
        except (ValueError, KeyError, TypeError, DeltaError) as exc:  # the action parser's CorruptLogError
            log.warning("health cache %s: ignoring unusable entry %s (%r); recomputing", self.uri,
                        key.file_key, exc)
            return None
        return found

    def store(self, key: CacheKey, figures: VersionHealth) -> None:
        """Keep ``figures`` under ``key`` and drop the table's entries of older versions (best
        effort: a failure is logged, never raised)."""
        data = json.dumps({"key": key.document(), "health": figures.to_json()}, separators=(",", ":"))
        self._replace(key.file_key, data.encode("utf-8"), "", key.version)

    def load_coverage(self, key: CheckpointKey) -> CheckpointCoverage | None:
        """The checkpoint rows' coverage stored under ``key``; None when none or unusable."""
        try:
            return CheckpointCoverage.decode(self._storage.read(key.file_key), key)
        except FileNotFoundError:
            return None
        except (DeltaError, OSError, ValueError, KeyError, TypeError, zlib.error) as exc:
            log.warning("health cache %s: ignoring unusable entry %s (%r); recomputing", self.uri,
                        key.file_key, exc)
            return None

    def store_coverage(self, key: CheckpointKey, coverage: CheckpointCoverage) -> None:
        """Keep ``coverage`` under ``key`` and drop the table's entries of older checkpoints
        (best effort, as ``store``)."""
        self._replace(key.file_key, coverage.encode(key), CHECKPOINT_PREFIX, key.version)

    def _replace(self, file_key: str, data: bytes, prefix: str, version: int) -> None:
        """Write ``data`` at ``file_key`` and delete the entries beside it named ``prefix`` and a
        version under ``version``; a failure is logged."""
        table_dir = file_key.split("/", 1)[0]
        start = len(prefix)
        try:
            self._storage.write(file_key, data)
            older = [f.key for f in self._storage.list_from(table_dir) if f.name.startswith(prefix)
                     and f.name[start:start + 20].isdigit() and int(f.name[start:start + 20]) < version]
            if older:
                self._storage.delete_many(older)
        except (DeltaError, OSError) as exc:
            log.warning("health cache %s: cannot write %s (%s); the next evaluation computes it again",
                        self.uri, file_key, exc)


def open_health_cache(uri: str, storage_options: Mapping[str, Any] | None = None) -> HealthCache:
    """The health cache in the directory (or fsspec URI) ``uri``."""
    return HealthCache(open_storage(uri, storage_options))


def health_cache_from_env(*, given: str | None = None, default: str | None = None) -> HealthCache | None:
    """The cache at ``given``, else the one ``$DELTA_HEALTH_CACHE`` names, else the one at
    ``default``; None without any."""
    uri = given or os.environ.get(CACHE_ENV) or default
    return open_health_cache(uri) if uri else None
