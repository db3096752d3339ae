"""Delta log actions (PROTOCOL.md "Actions") as frozen records, and their JSON encoding.

Each action type is one frozen dataclass. JSON field names are mapped to Python names in one
place (``_FIELDS``). Fields this library does not know are kept in ``extra`` so that an
action we re-encode (checkpoints, rewrites) loses nothing; readers simply ignore them.
Unknown action types parse to ``UnknownAction`` and are ignored by replay.

A log line is one JSON object holding one action (PROTOCOL.md "Delta Log Entries"). Keys beside
it that name no action this library knows (a future writer's addition) are ignored like any
other unknown content (``line_action``); a line with two known actions, or an empty object,
is corrupt.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from delta_core.errors import CorruptLogError

JsonDict = dict[str, Any]


@dataclass(frozen=True, slots=True)
class DeletionVectorDescriptor:
    storage_type: str  # "u" (uuid-relative), "i" (inline), "p" (absolute path)
    path_or_inline_dv: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None

    @property
    def unique_id(self) -> str:
        """``storageType + pathOrInlineDv`` plus ``@offset`` when present (Action Reconciliation)."""
        uid = f"{self.storage_type}{self.path_or_inline_dv}"
        return f"{uid}@{self.offset}" if self.offset is not None else uid

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DeletionVectorDescriptor:
        return cls(
            storage_type=d["storageType"],
            path_or_inline_dv=d["pathOrInlineDv"],
            size_in_bytes=int(d["sizeInBytes"]),
            cardinality=int(d["cardinality"]),
            offset=None if d.get("offset") is None else int(d["offset"]),
        )

    def to_json(self) -> JsonDict:
        out: JsonDict = {"storageType": self.storage_type, "pathOrInlineDv": self.path_or_inline_dv}
        if self.offset is not None:
            out["offset"] = self.offset
        out["sizeInBytes"] = self.size_in_bytes
        out["cardinality"] = self.cardinality
        return out


@dataclass(frozen=True, slots=True)
class Protocol:
    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class Format:
    provider: str = "parquet"
    options: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Metadata:
    id: str
    schema_string: str
    partition_columns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=dict)
    format: Format = field(default_factory=Format)
    name: str | None = None
    description: str | None = None
    created_time: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class Add:
    path: str  # URI reference, kept exactly as written (still encoded)
    partition_values: Mapping[str, str | None]
    size: int
    modification_time: int
    data_change: bool
    stats: str | None = None
    tags: Mapping[str, str] | None = None
    deletion_vector: DeletionVectorDescriptor | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    clustering_provider: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def dv_unique_id(self) -> str | None:
        return self.deletion_vector.unique_id if self.deletion_vector else None

    def to_remove(self, deletion_timestamp: int, *, data_change: bool = True) -> Remove:
        """The ``remove`` that logically deletes this file (extended metadata included)."""
        return Remove(
            path=self.path,
            deletion_timestamp=deletion_timestamp,
            data_change=data_change,
            extended_file_metadata=True,
            partition_values=self.partition_values,
            size=self.size,
            stats=self.stats,
            tags=self.tags,
            deletion_vector=self.deletion_vector,
            base_row_id=self.base_row_id,
            default_row_commit_version=self.default_row_commit_version,
        )


@dataclass(frozen=True, slots=True)
class Remove:
    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    partition_values: Mapping[str, str | None] | None = None
    size: int | None = None
    stats: str | None = None
    tags: Mapping[str, str] | None = None
    deletion_vector: DeletionVectorDescriptor | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def dv_unique_id(self) -> str | None:
        return self.deletion_vector.unique_id if self.deletion_vector else None


@dataclass(frozen=True, slots=True)
class AddCDCFile:
    path: str
    partition_values: Mapping[str, str | None]
    size: int
    data_change: bool = False
    tags: Mapping[str, str] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class Txn:
    app_id: str
    version: int
    last_updated: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """Provenance; free-form by the protocol, so the whole object is kept in ``values``."""

    values: Mapping[str, Any]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    @property
    def in_commit_timestamp(self) -> int | None:
        ts = self.values.get("inCommitTimestamp")
        return None if ts is None else int(ts)


@dataclass(frozen=True, slots=True)
class DomainMetadata:
    domain: str
    configuration: str
    removed: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class CheckpointMetadata:
    version: int
    tags: Mapping[str, str] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class Sidecar:
    path: str
    size_in_bytes: int
    modification_time: int
    tags: Mapping[str, str] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class UnknownAction:
    """An action type this library does not know; kept verbatim, ignored by replay."""

    key: str
    value: Any


Action = (
    Protocol | Metadata | Add | Remove | AddCDCFile | Txn | CommitInfo | DomainMetadata
    | CheckpointMetadata | Sidecar | UnknownAction
)

# JSON name of each action type, and for each record field its JSON name.
_ACTION_KEYS: dict[type, str] = {
    Protocol: "protocol",
    Metadata: "metaData",
    Add: "add",
    Remove: "remove",
    AddCDCFile: "cdc",
    Txn: "txn",
    CommitInfo: "commitInfo",
    DomainMetadata: "domainMetadata",
    CheckpointMetadata: "checkpointMetadata",
    Sidecar: "sidecar",
}
_TYPES_BY_KEY = {v: k for k, v in _ACTION_KEYS.items()}
ACTION_KEYS: frozenset[str] = frozenset(_TYPES_BY_KEY)

_FIELDS: dict[type, dict[str, str]] = {
    Protocol: {
        "min_reader_version": "minReaderVersion",
        "min_writer_version": "minWriterVersion",
        "reader_features": "readerFeatures",
        "writer_features": "writerFeatures",
    },
    Metadata: {
        "id": "id",
        "name": "name",
        "description": "description",
        "format": "format",
        "schema_string": "schemaString",
        "partition_columns": "partitionColumns",
        "configuration": "configuration",
        "created_time": "createdTime",
    },
    Add: {
        "path": "path",
        "partition_values": "partitionValues",
        "size": "size",
        "modification_time": "modificationTime",
        "data_change": "dataChange",
        "stats": "stats",
        "tags": "tags",
        "deletion_vector": "deletionVector",
        "base_row_id": "baseRowId",
        "default_row_commit_version": "defaultRowCommitVersion",
        "clustering_provider": "clusteringProvider",
    },
    Remove: {
        "path": "path",
        "deletion_timestamp": "deletionTimestamp",
        "data_change": "dataChange",
        "extended_file_metadata": "extendedFileMetadata",
        "partition_values": "partitionValues",
        "size": "size",
        "stats": "stats",
        "tags": "tags",
        "deletion_vector": "deletionVector",
        "base_row_id": "baseRowId",
        "default_row_commit_version": "defaultRowCommitVersion",
    },
    AddCDCFile: {
        "path": "path",
        "partition_values": "partitionValues",
        "size": "size",
        "data_change": "dataChange",
        "tags": "tags",
    },
    Txn: {"app_id": "appId", "version": "version", "last_updated": "lastUpdated"},
    DomainMetadata: {"domain": "domain", "configuration": "configuration", "removed": "removed"},
    CheckpointMetadata: {"version": "version", "tags": "tags"},
    Sidecar: {
        "path": "path",
        "size_in_bytes": "sizeInBytes",
        "modification_time": "modificationTime",
        "tags": "tags",
    },
}

ADD_JSON_FIELDS: Mapping[str, str] = _FIELDS[Add]
REMOVE_JSON_FIELDS: Mapping[str, str] = _FIELDS[Remove]

_REQUIRED: dict[type, tuple[str, ...]] = {
    Protocol: ("minReaderVersion", "minWriterVersion"),
    Metadata: ("id",),
    Add: ("path", "size"),
    Remove: ("path",),
    AddCDCFile: ("path",),
    Txn: ("appId", "version"),
    DomainMetadata: ("domain",),
    CheckpointMetadata: ("version",),
    Sidecar: ("path",),
}


def _convert_in(cls: type, name: str, value: Any) -> Any:
    if value is None:
        return None
    if name == "deletion_vector":
        return DeletionVectorDescriptor.from_json(value)
    if name == "format":
        return Format(value.get("provider", "parquet"), dict(value.get("options") or {}))
    if name in ("reader_features", "writer_features", "partition_columns"):
        return tuple(value)
    if name == "configuration" and cls is DomainMetadata:
        if not isinstance(value, str):  # a JSON document kept as a string, not a map
            raise TypeError("domainMetadata.configuration must be a string")
        return value
    if name in ("partition_values", "configuration", "tags"):
        return dict(value)
    return value


def line_action(obj: Any) -> tuple[str, Any] | None:
    """The one action of a log line's decoded object, as ``(key, body)``; ``None`` when the
    object is not a log line (not an object, empty, or two known actions).

    Unknown keys beside a known action are ignored; a line of unknown keys only is an unknown
    action (its first key), which replay ignores.
    """
    if not isinstance(obj, dict) or not obj:
        return None
    known = [k for k in obj if k in _TYPES_BY_KEY]
    if len(known) > 1:
        return None
    key = known[0] if known else next(iter(obj))
    return key, obj[key]


def action_from_json(obj: Mapping[str, Any]) -> Action:
    """Parse one line's object (``{"add": {...}}``) into an action record."""
    found = line_action(dict(obj))
    if found is None:
        raise CorruptLogError(f"a log line must hold exactly one known action, found keys {sorted(obj)}")
    key, body = found
    cls = _TYPES_BY_KEY.get(key)
    if cls is None:
        return UnknownAction(key, body)
    if not isinstance(body, Mapping):
        raise CorruptLogError(f"action {key!r} is not a JSON object")
    if cls is CommitInfo:
        return CommitInfo(dict(body))
    missing = [f for f in _REQUIRED.get(cls, ()) if body.get(f) is None]
    if missing:
        raise CorruptLogError(f"{key} action lacks required field(s) {missing}")
    mapping = _FIELDS[cls]
    kwargs: dict[str, Any] = {}
    for py_name, js_name in mapping.items():
        if js_name in body:
            try:
                kwargs[py_name] = _convert_in(cls, py_name, body[js_name])
            except (TypeError, ValueError, KeyError, AttributeError) as exc:
                raise CorruptLogError(f"{key}.{js_name} has an invalid value: {exc}") from exc
    if cls is Metadata:
        kwargs.setdefault("schema_string", body.get("schemaString"))
        kwargs["partition_columns"] = kwargs.get("partition_columns") or ()
        kwargs["configuration"] = kwargs.get("configuration") or {}
        kwargs["format"] = kwargs.get("format") or Format()
    if cls is Add:
        kwargs["partition_values"] = kwargs.get("partition_values") or {}
        kwargs.setdefault("modification_time", 0)
        kwargs["data_change"] = bool(kwargs.get("data_change", True))
    if cls is Remove:
        kwargs["data_change"] = bool(kwargs.get("data_change", True))
    if cls is AddCDCFile:
        kwargs["partition_values"] = kwargs.get("partition_values") or {}
        kwargs.setdefault("size", 0)
    if cls is DomainMetadata:
        kwargs.setdefault("configuration", "")
        kwargs["removed"] = bool(kwargs.get("removed", False))
    if cls is Sidecar:
        kwargs.setdefault("size_in_bytes", 0)
        kwargs.setdefault("modification_time", 0)
    known = set(mapping.values())
    kwargs["extra"] = {k: v for k, v in body.items() if k not in known}
    try:
        return cast(Action, cls(**kwargs))  # cls comes from _ACTION_KEYS: an Action class
    except (TypeError, ValueError, KeyError) as exc:
        raise CorruptLogError(f"malformed {key} action: {exc}") from exc


def _convert_out(value: Any) -> Any:
    if isinstance(value, DeletionVectorDescriptor):
        return value.to_json()
    if isinstance(value, Format):
        return {"provider": value.provider, "options": dict(value.options)}
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


# Fields written even when None/empty because the protocol requires them.
_ALWAYS: dict[type, frozenset[str]] = {
    Metadata: frozenset({"format", "schema_string", "partition_columns", "configuration"}),
    Add: frozenset({"partition_values", "size", "modification_time", "data_change"}),
    Remove: frozenset({"data_change"}),
    AddCDCFile: frozenset({"partition_values", "size", "data_change"}),
}


def action_to_json(action: Action) -> JsonDict:
    """Encode an action as the one-key object written on a log line."""
    if isinstance(action, UnknownAction):
        return {action.key: action.value}
    if isinstance(action, CommitInfo):
        return {"commitInfo": dict(action.values)}
    cls = type(action)
    always = _ALWAYS.get(cls, frozenset())
    body: JsonDict = {}
    for py_name, js_name in _FIELDS[cls].items():
        value = getattr(action, py_name)
        if value is None and py_name not in always:
            continue
        body[js_name] = _convert_out(value)
    for k, v in action.extra.items():
        body.setdefault(k, v)
    return {_ACTION_KEYS[cls]: body}


def encode_actions(actions: Iterable[Action]) -> bytes:
    """Newline-delimited JSON for a commit file."""
    lines = [json.dumps(action_to_json(a), separators=(",", ":"), ensure_ascii=False) for a in actions]
    return ("\n".join(lines) + "\n").encode("utf-8")


def iter_log_lines(
    data: bytes, *, source: str | None, version: int | None = None,
    remedy: str = "restore it from a backup or ask the writer that produced it",
) -> Iterator[tuple[int, str, Any]]:
    """Yield ``(line number, action key, body)`` for each line of a JSON log file.

    The one place newline-delimited log JSON is split and validated: blank lines are skipped;
    a line that is not JSON, or not an object holding one action (``line_action``: unknown
    keys beside it are ignored), raises ``CorruptLogError`` naming the file, line and ``remedy``.
    """
    where = source or "a log file"
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        yield lineno, *parse_log_line(line, lineno, where=where, source=source, version=version, remedy=remedy)


def parse_log_line(
    line: bytes, lineno: int, *, where: str, source: str | None, version: int | None, remedy: str,
) -> tuple[str, Any]:
    """``(action key, body)`` of one non-blank log line, or the ``CorruptLogError`` that
    ``iter_log_lines`` raises for it."""
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise CorruptLogError(
            f"line {lineno} of {where} is not valid JSON ({exc}); the file is corrupt or "
            f"truncated: {remedy}", path=source, version=version,
        ) from exc
    found = line_action(obj)
    if found is None:
        raise CorruptLogError(
            f"line {lineno} of {where} is not a single action object (a JSON object with one "
            f"action); the file is corrupt: {remedy}", path=source, version=version,
        )
    return found


def parse_actions(data: bytes, *, path: str | None = None, version: int | None = None) -> list[Action]:
    """Parse a commit (or JSON checkpoint) file; a bad line raises ``CorruptLogError``."""
    out: list[Action] = []
    for lineno, key, body in iter_log_lines(data, source=path, version=version):
        try:
            out.append(action_from_json({key: body}))
        except CorruptLogError as exc:
            raise CorruptLogError(f"{path}: line {lineno}: {exc}", path=path, version=version) from exc
    return out

