"""Deletion vectors: descriptor -> file -> bytes -> the set of deleted row indexes.

PROTOCOL.md "Deletion Vectors" and "Deletion Vector Format". A descriptor
(``DeletionVectorDescriptor``, ``delta_core.model.actions``) names where the vector is stored:

- ``u``: a file under the table root, ``pathOrInlineDv`` = an optional random prefix (a
  directory) plus the Z85-encoded UUID of the file ``deletion_vector_<uuid>.bin``;
- ``p``: the absolute path of the file;
- ``i``: the vector itself, Z85-encoded inline (no file).

A DV file starts with a version byte (1). ``offset`` points at one stored vector: a 4-byte
big-endian ``sizeInBytes``, then ``sizeInBytes`` bytes of data, then the big-endian CRC-32 of
those data bytes. The data (and an inline vector) is the little-endian magic number
``1681511377`` followed by the deleted row indexes as a 64-bit RoaringBitmap in the portable
serialisation, which ``pyroaring.BitMap64`` reads as is. Everything is checked (magic, CRC,
``cardinality``) and a bad vector is a ``DeletionVectorError`` naming its file: applying a wrong
vector would silently lose or resurrect rows.

One ranged read per vector goes through ``Storage``; only files under the table root can be
read (``p`` paths elsewhere are refused, as are paths that cannot be placed with certainty).
"""

from __future__ import annotations

import struct
import uuid
import zlib

from pyroaring import BitMap64

from delta_core.errors import DeletionVectorError
from delta_core.model.actions import DeletionVectorDescriptor
from delta_core.model.path_identity import TableRoot
from delta_core.storage.base import Storage, normalize_key

MAGIC = 1681511377  # little-endian, before the bitmap
FORMAT_VERSION = 1  # the first byte of a DV file
_UUID_CHARS = 20  # Z85 of 16 bytes
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(_Z85)}


def z85_decode(text: str) -> bytes:
    """Z85 (ZeroMQ RFC 32) text -> bytes: 5 characters per big-endian 4-byte word."""
    if len(text) % 5:
        raise DeletionVectorError(f"Z85 text {text!r} has length {len(text)}, not a multiple of 5")
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for ch in text[i:i + 5]:
            digit = _Z85_INDEX.get(ch)
            if digit is None:
                raise DeletionVectorError(f"Z85 text {text!r} holds {ch!r}, which is not a Z85 character")
            value = value * 85 + digit
        if value > 0xFFFFFFFF:
            raise DeletionVectorError(f"Z85 text {text!r} encodes a word above 32 bits")
        out += value.to_bytes(4, "big")
    return bytes(out)


def dv_relative_path(storage_type: str, path_or_inline_dv: str) -> str | None:
    """The deletion vector file of a descriptor, as a log path (``None`` for inline DVs).

    ``u``: ``<random prefix><20 chars Z85 UUID>`` -> ``<prefix>/deletion_vector_<uuid>.bin``;
    ``p``: an absolute path, returned as is; ``i``: inline, no file.
    """
    if storage_type == "u":
        if len(path_or_inline_dv) < _UUID_CHARS:
            raise DeletionVectorError(f"deletion vector path {path_or_inline_dv!r} is shorter than the "
                                      f"{_UUID_CHARS} characters of a Z85 UUID: the log is corrupt")
        prefix, encoded = path_or_inline_dv[:-_UUID_CHARS], path_or_inline_dv[-_UUID_CHARS:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        return f"{prefix}/{name}" if prefix else name
    if storage_type == "p":
        return path_or_inline_dv
    return None


def dv_file_key(dv: DeletionVectorDescriptor, table_root: str | TableRoot) -> str | None:
    """The storage key (relative to ``table_root``) of the file holding ``dv``; ``None`` inline.
    A file not certainly under the root is a ``DeletionVectorError``."""
    if dv.storage_type not in ("u", "p", "i"):
        raise DeletionVectorError(
            f"deletion vector storage type {dv.storage_type!r} is not one of u, p, i (PROTOCOL.md "
            "\"Deletion Vector Descriptor Schema\"); the log may come from a newer writer")
    path = dv_relative_path(dv.storage_type, dv.path_or_inline_dv)
    if path is None:
        return None
    if dv.storage_type == "u":  # relative: no need to resolve the root (a realpath per file read)
        return normalize_key(path, root=table_root if isinstance(table_root, str) else table_root.location.uri)
    root = table_root if isinstance(table_root, TableRoot) else TableRoot.of(table_root)
    key = root.place(path).key
    if key is None:
        raise DeletionVectorError(
            f"deletion vector file {path} is not certainly under the table root {root.location.uri}; "
            "only deletion vectors stored with the table can be read. Purge the vectors with the "
            "engine that wrote them (REORG TABLE ... APPLY (PURGE)), then re-run", path=path)
    return normalize_key(key, root=root.location.uri)


def read_deletion_vector(storage: Storage, dv: DeletionVectorDescriptor) -> BitMap64:
    """The row indexes ``dv`` deletes, checked (magic, CRC, ``cardinality``); one ranged read
    through ``storage`` for a vector stored in a file."""
    key = dv_file_key(dv, storage.root)
    if key is None:
        where = f"inline deletion vector {dv.path_or_inline_dv[:40]!r}"
        data = z85_decode(dv.path_or_inline_dv)
        if dv.size_in_bytes > len(data):
            raise DeletionVectorError(f"{where} holds {len(data)} bytes, fewer than its sizeInBytes "
                                      f"{dv.size_in_bytes}", path=storage.root)
        data = data[:dv.size_in_bytes]  # Z85 pads to whole 4-byte words
        return _bitmap(data, dv, where=where, path=storage.root)
    where = storage.uri(key)
    data = _read_stored(storage, key, dv, where=where)
    return _bitmap(data, dv, where=where, path=where)


def _read_stored(storage: Storage, key: str, dv: DeletionVectorDescriptor, *, where: str) -> bytes:
    """The ``sizeInBytes`` data bytes of the vector at ``offset`` in the file ``key``, CRC checked."""
    offset = dv.offset if dv.offset is not None else 1  # the first vector follows the version byte
    try:
        with storage.open_input(key) as fh:
            if offset == 1:  # read the version byte too: same request
                head = fh.read(1)
                if head != bytes([FORMAT_VERSION]):
                    raise DeletionVectorError(
                        f"deletion vector file {where} starts with {head.hex() or 'nothing'}, not the "
                        f"format version {FORMAT_VERSION}: the file is corrupt or not a deletion vector",
                        path=where)
            else:
                fh.seek(offset)
            block = fh.read(4 + dv.size_in_bytes + 4)
    except FileNotFoundError as exc:
        raise DeletionVectorError(
            f"deletion vector file {where} is missing (deleted outside the Delta log?); the table's "
            "deleted rows cannot be known. Restore the file, then re-run", path=where) from exc
    if len(block) < 8 + dv.size_in_bytes:
        raise DeletionVectorError(
            f"deletion vector file {where} ends before the {dv.size_in_bytes} bytes at offset {offset} "
            "the log names: the file is truncated or not the one the log means", path=where)
    (size,) = struct.unpack(">I", block[:4])
    if size != dv.size_in_bytes:
        raise DeletionVectorError(
            f"deletion vector at offset {offset} of {where} is {size} bytes, but the log says "
            f"{dv.size_in_bytes}: the file is corrupt or not the one the log means", path=where)
    data = block[4:4 + size]
    (crc,) = struct.unpack(">I", block[4 + size:8 + size])
    if zlib.crc32(data) != crc:
        raise DeletionVectorError(
            f"deletion vector at offset {offset} of {where} fails its CRC-32 check: the file is corrupt. "
            "Restore it from a backup, then re-run", path=where)
    return data


def _bitmap(data: bytes, dv: DeletionVectorDescriptor, *, where: str, path: str) -> BitMap64:
    if len(data) < 4 or struct.unpack("<I", data[:4])[0] != MAGIC:
        found = struct.unpack("<I", data[:4])[0] if len(data) >= 4 else None
        raise DeletionVectorError(
            f"{where}: magic number {found} is not {MAGIC} (PROTOCOL.md \"Deletion Vector Format\"): "
            "the vector is corrupt or in a layout this library does not read", path=path)
    try:
        bitmap = BitMap64.deserialize(data[4:])
    except ValueError as exc:  # pyroaring's only error for bytes it cannot decode
        raise DeletionVectorError(f"{where}: the RoaringBitmap cannot be decoded ({exc}): the vector is "
                                  "corrupt", path=path) from exc
    if len(bitmap) != dv.cardinality:
        raise DeletionVectorError(
            f"{where} marks {len(bitmap)} deleted rows, but the log says cardinality {dv.cardinality}: "
            "the vector is corrupt or not the one the log means", path=path)
    return bitmap
