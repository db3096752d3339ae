"""Version checksum files, ``_delta_log/<version>.crc`` (PROTOCOL.md "Version Checksum File":
schema, "State Validation", "Reader Requirements").

A ``.crc`` records the table state after a commit: live file count and bytes, the protocol and
metadata, optionally the live txns and domains, the in-commit timestamp, a file size histogram
and deletion-vector counts. This module reads one (``read_version_checksum``), derives one from
a reconciled state (``checksum_of_state``; the writer's side is ``write.checksum_write``) and
compares one with a loaded snapshot (``verify_version_checksum``).

Readers must work without ``.crc`` files, and a ``.crc`` that disagrees with the log is the
other engine's bug or a tampered log, not a reason to refuse the table: loading a snapshot
only logs a warning (``warn_on_mismatch``); ``verify_version_checksum`` reports
``ok``/``mismatch``/``absent``/``corrupt``/``unreadable`` for callers that want to surface it (``describe``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from delta_core.errors import CorruptLogError, StorageError
from delta_core.log.log_path import LOG_DIR
from delta_core.log.replay import ReplayState
from delta_core.model.actions import DomainMetadata, Metadata, Protocol, Txn, action_from_json, action_to_json
from delta_core.model.file_size_histogram import FileSizeHistogram
from delta_core.model.table_features import has_feature
from delta_core.storage.base import Storage

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

log = logging.getLogger(__name__)

# Older writers (delta-rs before the protocol named it) call the histogram ``histogramOpt``.
_HISTOGRAM_KEYS = ("fileSizeHistogram", "histogramOpt")


def checksum_key(version: int) -> str:
    return f"{LOG_DIR}/{version:020d}.crc"


@dataclass(frozen=True, slots=True)
class VersionChecksum:
    """One ``.crc`` file's content (optional fields ``None`` when absent)."""

    table_size_bytes: int
    num_files: int
    metadata: Metadata
    protocol: Protocol
    num_metadata: int = 1
    num_protocol: int = 1
    txn_id: str | None = None
    in_commit_timestamp: int | None = None
    set_transactions: tuple[Txn, ...] | None = None
    domain_metadata: tuple[DomainMetadata, ...] | None = None
    file_size_histogram: FileSizeHistogram | None = None
    num_deleted_records: int | None = None
    num_deletion_vectors: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.txn_id is not None:
            out["txnId"] = self.txn_id
        out.update(tableSizeBytes=self.table_size_bytes, numFiles=self.num_files,
                   numMetadata=self.num_metadata, numProtocol=self.num_protocol)
        if self.in_commit_timestamp is not None:
            out["inCommitTimestampOpt"] = self.in_commit_timestamp
        if self.set_transactions is not None:
            out["setTransactions"] = [action_to_json(t)["txn"] for t in self.set_transactions]
        if self.domain_metadata is not None:
            out["domainMetadata"] = [action_to_json(d)["domainMetadata"] for d in self.domain_metadata]
        out["metadata"] = action_to_json(self.metadata)["metaData"]
        out["protocol"] = action_to_json(self.protocol)["protocol"]
        if self.file_size_histogram is not None:
            out["fileSizeHistogram"] = self.file_size_histogram.to_json()
        if self.num_deleted_records is not None:
            out["numDeletedRecordsOpt"] = self.num_deleted_records
        if self.num_deletion_vectors is not None:
            out["numDeletionVectorsOpt"] = self.num_deletion_vectors
        return out

    def encode(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def parse_version_checksum(data: bytes, *, path: str, version: int) -> VersionChecksum:
    """Parse a ``.crc`` file; ``CorruptLogError`` when it is not the protocol's JSON object."""
    try:
        obj = json.loads(data)
        if not isinstance(obj, dict):
            raise TypeError("not a JSON object")
        histogram = next((obj[k] for k in _HISTOGRAM_KEYS if isinstance(obj.get(k), dict)), None)
        metadata = action_from_json({"metaData": obj["metadata"]})
        protocol = action_from_json({"protocol": obj["protocol"]})
        txns = obj.get("setTransactions")
        domains = obj.get("domainMetadata")
        return VersionChecksum(
            table_size_bytes=_long(obj["tableSizeBytes"]),
            num_files=_long(obj["numFiles"]),
            metadata=metadata,  # type: ignore[arg-type]  # the key decides the record type
            protocol=protocol,  # type: ignore[arg-type]
            num_metadata=_long(obj["numMetadata"]),
            num_protocol=_long(obj["numProtocol"]),
            txn_id=obj.get("txnId"),
            in_commit_timestamp=_opt_long(obj.get("inCommitTimestampOpt")),
            set_transactions=None if txns is None else tuple(
                action_from_json({"txn": t}) for t in txns),  # type: ignore[misc]
            domain_metadata=None if domains is None else tuple(
                action_from_json({"domainMetadata": d}) for d in domains),  # type: ignore[misc]
            file_size_histogram=None if histogram is None else FileSizeHistogram.from_json(
                histogram, path=path, version=version),
            num_deleted_records=_opt_long(obj.get("numDeletedRecordsOpt")),
            num_deletion_vectors=_opt_long(obj.get("numDeletionVectorsOpt")),
        )
    except (ValueError, TypeError, KeyError, CorruptLogError) as exc:
        raise CorruptLogError(
            f"version checksum {path} is not a valid .crc file ({exc!r}); it is optional: delete it "
            "and the table reads the same", path=path, version=version) from None


def _long(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{value!r} is not a long")
    return value


def _opt_long(value: Any) -> int | None:
    return None if value is None else _long(value)


def read_version_checksum(storage: Storage, version: int) -> VersionChecksum | None:
    """The ``.crc`` of ``version``, ``None`` when there is none; ``CorruptLogError`` if unreadable."""
    key = checksum_key(version)
    try:
        data = storage.read(key)
    except FileNotFoundError:
        return None
    return parse_version_checksum(data, path=storage.uri(key), version=version)


def checksum_of_state(state: ReplayState, *, txn_id: str | None = None, in_commit_timestamp: int | None = None,
                      include_txns: bool = True) -> VersionChecksum:
    """The checksum of a reconciled ``state`` (with protocol and metadata).

    ``include_txns=False`` leaves ``setTransactions`` out: on tables with
    ``delta.setTransactionRetentionDuration`` which txns are live depends on when one asks,
    and the field is optional.
    """
    assert state.protocol is not None and state.metadata is not None  # a committed state has both
    files = state.file_columns(["size", "deletion_vector"])
    sizes = files["size"]
    dv_counts: dict[str, int | None] = {"records": None, "vectors": None}
    if has_feature(state.protocol, "deletionVectors"):
        cardinality = pc.struct_field(files["deletion_vector"], "cardinality")
        dv_counts = {"records": int(pc.sum(cardinality).as_py() or 0),
                     "vectors": len(cardinality) - cardinality.null_count}
    return VersionChecksum(
        table_size_bytes=int(pc.sum(sizes).as_py() or 0),
        num_files=files.num_rows,
        metadata=state.metadata,
        protocol=state.protocol,
        txn_id=txn_id,
        in_commit_timestamp=in_commit_timestamp,
        set_transactions=tuple(state.txns[k] for k in sorted(state.txns)) if include_txns else None,
        domain_metadata=tuple(state.domain_metadata[k] for k in sorted(state.domain_metadata)),
        file_size_histogram=FileSizeHistogram.of_sizes(sizes),
        num_deleted_records=dv_counts["records"],
        num_deletion_vectors=dv_counts["vectors"],
    )


@dataclass(frozen=True, slots=True)
class ChecksumCheck:
    """Outcome of comparing a snapshot with its version's ``.crc``."""

    status: str  # "ok" | "mismatch" | "absent" | "corrupt" | "unreadable"
    problems: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "problems": list(self.problems)}


def compare(snapshot_numbers: Mapping[str, int | None], crc: VersionChecksum) -> tuple[str, ...]:
    """What differs between a snapshot's numbers and a checksum's (fields the ``.crc`` has)."""
    recorded = {"numFiles": crc.num_files, "tableSizeBytes": crc.table_size_bytes,
                "numDeletedRecordsOpt": crc.num_deleted_records,
                "numDeletionVectorsOpt": crc.num_deletion_vectors}
    return tuple(
        f"{name}: the log gives {snapshot_numbers[name]}, the .crc says {value}"
        for name, value in recorded.items()
        if value is not None and name in snapshot_numbers and snapshot_numbers[name] != value)


def _numbers(snapshot: Snapshot) -> dict[str, int | None]:
    cardinality = pc.struct_field(snapshot.file_columns("deletion_vector")["deletion_vector"], "cardinality")
    return {"numFiles": snapshot.num_files, "tableSizeBytes": snapshot.size_in_bytes,
            "numDeletedRecordsOpt": int(pc.sum(cardinality).as_py() or 0),
            "numDeletionVectorsOpt": len(cardinality) - cardinality.null_count}


def verify_version_checksum(snapshot: Snapshot) -> ChecksumCheck:
    """Compare ``snapshot`` with the ``.crc`` of its version (PROTOCOL.md "State Validation")."""
    try:
        crc = read_version_checksum(snapshot.storage, snapshot.version)
    except CorruptLogError as exc:
        return ChecksumCheck("corrupt", (str(exc),))
    except (StorageError, OSError) as exc:
        # An optional file that cannot be read (e.g. permissions) must not fail a read.
        return ChecksumCheck("unreadable", (str(exc),))
    if crc is None:
        return ChecksumCheck("absent")
    problems = compare(_numbers(snapshot), crc)
    if crc.in_commit_timestamp is not None and snapshot.properties.in_commit_timestamps \
            and crc.in_commit_timestamp != snapshot.timestamp:
        problems += (f"inCommitTimestampOpt: the commit gives {snapshot.timestamp}, the .crc says "
                     f"{crc.in_commit_timestamp}",)
    if crc.metadata.id != snapshot.metadata.id:
        problems += (f"metadata id: the log gives {snapshot.metadata.id}, the .crc says {crc.metadata.id}",)
    return ChecksumCheck("mismatch" if problems else "ok", problems)


def warn_on_mismatch(snapshot: Snapshot) -> None:
    """Log a warning when the ``.crc`` of the snapshot's version disagrees with it (or is
    unreadable); a loaded snapshot calls this only when its listing saw that ``.crc``."""
    check = verify_version_checksum(snapshot)
    if check.status in ("mismatch", "corrupt", "unreadable"):
        log.warning("table=%s version=%d version checksum %s: %s", snapshot.storage.root,
                    snapshot.version, check.status, "; ".join(check.problems))
