"""Log file names, parsed once (PROTOCOL.md "Delta Log Entries" and "Checkpoints").

Every name in ``_delta_log/`` is classified into a ``LogPath`` with a ``LogFileKind``; names
that match no pattern are ``None`` and ignored by readers. Pure: no IO.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

LOG_DIR = "_delta_log"
SIDECAR_DIR = f"{LOG_DIR}/_sidecars"
LAST_CHECKPOINT = f"{LOG_DIR}/_last_checkpoint"

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTIPART = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_V2 = re.compile(r"^(\d{20})\.checkpoint\.([0-9a-fA-F-]{36})\.(json|parquet)$")
_COMPACTED = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")
_CRC = re.compile(r"^(\d{20})\.crc$")


class LogFileKind(enum.Enum):
    COMMIT = "commit"
    CHECKPOINT = "checkpoint"  # classic single-file parquet checkpoint
    MULTIPART_CHECKPOINT = "multipart_checkpoint"
    V2_CHECKPOINT = "v2_checkpoint"  # UUID-named, JSON or parquet, may reference sidecars
    COMPACTED_COMMITS = "compacted_commits"
    CRC = "crc"


@dataclass(frozen=True, slots=True)
class LogPath:
    """A classified log file. ``key`` is relative to the table root."""

    kind: LogFileKind
    version: int
    key: str
    size: int = 0
    modification_time: int = 0
    part: int | None = None  # multi-part: 1-based part number
    num_parts: int | None = None
    end_version: int | None = None  # compacted commits: last version covered
    uuid: str | None = None  # V2 checkpoint
    file_format: str = "parquet"  # V2 checkpoints: "json" or "parquet"

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def is_checkpoint(self) -> bool:
        return self.kind in (
            LogFileKind.CHECKPOINT,
            LogFileKind.MULTIPART_CHECKPOINT,
            LogFileKind.V2_CHECKPOINT,
        )


def parse_log_name(name: str, *, size: int = 0, modification_time: int = 0) -> LogPath | None:
    """Classify a file name found in ``_delta_log/``; ``None`` for anything else."""
    key = f"{LOG_DIR}/{name}"
    if m := _COMMIT.match(name):
        return LogPath(LogFileKind.COMMIT, int(m[1]), key, size, modification_time, file_format="json")
    if m := _CHECKPOINT.match(name):
        return LogPath(LogFileKind.CHECKPOINT, int(m[1]), key, size, modification_time)
    if m := _MULTIPART.match(name):
        part, parts = int(m[2]), int(m[3])
        if parts < 1 or not 1 <= part <= parts:
            return None
        return LogPath(
            LogFileKind.MULTIPART_CHECKPOINT, int(m[1]), key, size, modification_time,
            part=part, num_parts=parts,
        )
    if m := _V2.match(name):
        return LogPath(
            LogFileKind.V2_CHECKPOINT, int(m[1]), key, size, modification_time,
            uuid=m[2], file_format=m[3],
        )
    if m := _COMPACTED.match(name):
        start, end = int(m[1]), int(m[2])
        if end < start:
            return None
        return LogPath(
            LogFileKind.COMPACTED_COMMITS, start, key, size, modification_time,
            end_version=end, file_format="json",
        )
    if m := _CRC.match(name):
        return LogPath(LogFileKind.CRC, int(m[1]), key, size, modification_time, file_format="json")
    return None


def commit_key(version: int) -> str:
    return f"{LOG_DIR}/{version:020d}.json"


def checkpoint_key(version: int) -> str:
    return f"{LOG_DIR}/{version:020d}.checkpoint.parquet"


def multipart_checkpoint_key(version: int, part: int, num_parts: int) -> str:
    return f"{LOG_DIR}/{version:020d}.checkpoint.{part:010d}.{num_parts:010d}.parquet"


def v2_checkpoint_key(version: int, checkpoint_uuid: str, file_format: str = "parquet") -> str:
    """A UUID-named (V2 spec) checkpoint: ``n.checkpoint.<uuid>.parquet`` or ``.json``."""
    return f"{LOG_DIR}/{version:020d}.checkpoint.{checkpoint_uuid}.{file_format}"


def compacted_key(start_version: int, end_version: int) -> str:
    """A log compaction file covering commits ``start_version..end_version``."""
    return f"{LOG_DIR}/{start_version:020d}.{end_version:020d}.compacted.json"


def version_prefix(version: int) -> str:
    """The name prefix from which listing ``_delta_log`` starts for ``version``."""
    return f"{version:020d}"
