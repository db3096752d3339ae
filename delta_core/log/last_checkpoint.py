"""The ``_delta_log/_last_checkpoint`` hint (PROTOCOL.md "Last Checkpoint File" and
"Last Checkpoint File Schema", including "JSON checksum").

``_last_checkpoint`` only tells a reader where to start listing; the log itself is the truth.
So reading it never raises: an absent, empty, unparsable, duplicate-keyed or
checksum-mismatched file yields ``None`` ("no hint") and the reader lists the log instead.
Writers use ``encode_last_checkpoint`` which always adds a correct ``checksum``.

Checksum rules (PROTOCOL.md "JSON checksum"): every scalar leaf becomes ``path=value`` where
path segments are URL-encoded quoted object keys or bare array indexes joined by ``+``;
strings are URL-encoded and quoted, numbers keep their JSON text, literals stay as is; pairs
are sorted by the UTF-8 bytes of the path and joined by ``,``; the top-level ``checksum`` key
is left out; the MD5 hex digest of that string is the checksum.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from delta_core.errors import DeltaError
from delta_core.log.log_path import LAST_CHECKPOINT
from delta_core.storage.base import Storage

log = logging.getLogger(__name__)

# JSON names of the record's fields, in the order a writer emits them.
_FIELDS = {
    "version": "version",
    "size": "size",
    "parts": "parts",
    "size_in_bytes": "sizeInBytes",
    "num_of_add_files": "numOfAddFiles",
    "checkpoint_schema": "checkpointSchema",
    "tags": "tags",
    "v2_checkpoint": "v2Checkpoint",
}


@dataclass(frozen=True, slots=True)
class LastCheckpoint:
    """Content of ``_last_checkpoint``. ``checksum`` is what the file carried (``None`` if absent);
    ``extra`` keeps fields this library does not know so a rewrite loses nothing."""

    version: int
    size: int | None = None
    parts: int | None = None
    size_in_bytes: int | None = None
    num_of_add_files: int | None = None
    checkpoint_schema: Mapping[str, Any] | None = None
    tags: Mapping[str, str] | None = None
    v2_checkpoint: Mapping[str, Any] | None = None
    checksum: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The JSON object without ``checksum`` (``encode_last_checkpoint`` adds it)."""
        out: dict[str, Any] = {}
        for py_name, js_name in _FIELDS.items():
            value = getattr(self, py_name)
            if value is not None:
                out[js_name] = value
        for k, v in self.extra.items():
            if k != "checksum":
                out.setdefault(k, v)
        return out


# --- checksum ----------------------------------------------------------------------------


class _Number(str):
    """A JSON number kept as its source text: the canonical form of a number is its own text."""


class _DuplicateKeyError(ValueError):
    pass


def _url_encode(text: str) -> str:
    # quote() never escapes ALPHA / DIGIT / "-._~" and emits upper-case hex, which is exactly
    # the strict encoding the protocol asks for once "/" is removed from the safe set.
    return quote(text, safe="")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, _Number):
        return str(value)
    if isinstance(value, str):
        return f'"{_url_encode(value)}"'
    if isinstance(value, (int, float)):
        return json.dumps(value)
    raise TypeError(f"not a JSON scalar: {value!r}")


def _leaves(value: Any, path: str, out: list[tuple[bytes, str]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _leaves(v, f'{path}+"{_url_encode(k)}"', out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _leaves(v, f"{path}+{i}", out)
    else:
        out.append((path.encode("utf-8"), _scalar(value)))


def canonicalize(obj: Mapping[str, Any]) -> str:
    """The canonical string of a parsed ``_last_checkpoint`` object (top-level ``checksum`` left out).

    Parse with ``parse_checkpoint_json`` so numbers keep their source text.
    """
    pairs: list[tuple[bytes, str]] = []
    for k, v in obj.items():
        if k == "checksum":
            continue
        _leaves(v, f'"{_url_encode(k)}"', pairs)
    pairs.sort(key=lambda p: p[0])
    return ",".join(f"{p.decode('utf-8')}={v}" for p, v in pairs)


def compute_checksum(obj: Mapping[str, Any]) -> str:
    """MD5 hex digest of ``canonicalize(obj)``."""
    return hashlib.md5(canonicalize(obj).encode("utf-8")).hexdigest()


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKeyError(f"duplicate key {k!r}")
        out[k] = v
    return out


def parse_checkpoint_json(text: str | bytes) -> Any:
    """Parse JSON keeping number text and refusing duplicate keys (rule 7 of "JSON checksum")."""
    return json.loads(text, parse_int=_Number, parse_float=_Number, object_pairs_hook=_no_duplicates)


def _plain(value: Any) -> Any:
    """Turn kept number text back into Python numbers (for the record's fields)."""
    if isinstance(value, _Number):
        text = str(value)
        try:
            return int(text)
        except ValueError:
            return float(text)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# --- read and encode ---------------------------------------------------------------------


def _opt_int(obj: Mapping[str, Any], key: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} is not a whole number: {value!r}")
    return value


def decode_last_checkpoint(data: bytes, *, verify_checksum: bool = True) -> LastCheckpoint:
    """Parse ``_last_checkpoint`` content; raises ``ValueError`` when it is unusable.

    ``read_last_checkpoint`` turns every failure into "no hint"; this strict form is for tests
    and tools that want to know why.
    """
    text = data.decode("utf-8")
    if not text.strip():
        raise ValueError("the file is empty")
    raw = parse_checkpoint_json(text)
    if not isinstance(raw, dict):
        raise ValueError("the content is not a JSON object")
    checksum = raw.get("checksum")
    if checksum is not None and not isinstance(checksum, str):
        raise ValueError(f"checksum is not a string: {checksum!r}")
    if verify_checksum and checksum is not None:
        actual = compute_checksum(raw)
        if actual != checksum.lower():
            raise ValueError(f"checksum mismatch: file says {checksum}, content gives {actual}")
    obj = _plain(raw)
    version = _opt_int(obj, "version")
    if version is None or version < 0:
        raise ValueError(f"version is missing or negative: {obj.get('version')!r}")
    parts = _opt_int(obj, "parts")
    if parts is not None and parts < 1:
        raise ValueError(f"parts must be at least 1: {parts}")
    known = set(_FIELDS.values()) | {"checksum"}
    for key in ("checkpointSchema", "tags", "v2Checkpoint"):
        if obj.get(key) is not None and not isinstance(obj[key], dict):
            raise ValueError(f"{key} is not a JSON object")
    return LastCheckpoint(
        version=version,
        size=_opt_int(obj, "size"),
        parts=parts,
        size_in_bytes=_opt_int(obj, "sizeInBytes"),
        num_of_add_files=_opt_int(obj, "numOfAddFiles"),
        checkpoint_schema=obj.get("checkpointSchema"),
        tags=obj.get("tags"),
        v2_checkpoint=obj.get("v2Checkpoint"),
        checksum=checksum,
        extra={k: v for k, v in obj.items() if k not in known},
    )


def read_last_checkpoint(storage: Storage) -> LastCheckpoint | None:
    """The ``_last_checkpoint`` hint, or ``None`` when it is absent or unusable. Never raises:
    a bad hint only costs a longer listing, so the reason is logged as a warning."""
    try:
        data = storage.read(LAST_CHECKPOINT)
    except FileNotFoundError:
        return None
    except (OSError, DeltaError) as exc:
        log.warning("cannot read %s (%s); listing the log without the hint", storage.uri(LAST_CHECKPOINT), exc)
        return None
    try:
        return decode_last_checkpoint(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        log.warning(
            "ignoring %s: %s; the log is listed in full instead (rewrite the file by writing a "
            "new checkpoint)", storage.uri(LAST_CHECKPOINT), exc,
        )
        return None


def encode_last_checkpoint(record: LastCheckpoint) -> bytes:
    """The ``_last_checkpoint`` JSON for ``record`` with a correct ``checksum``."""
    body = record.to_json()
    compact = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    # The checksum is computed over the text as written (numbers keep their written form).
    checksum = compute_checksum(parse_checkpoint_json(compact))
    body["checksum"] = checksum
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
