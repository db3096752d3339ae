"""Variant binaries written by hand for tests, byte by byte as apache/parquet-format
``VariantEncoding.md`` lays them out, independent of ``delta_core.model.variant_binary``."""

from __future__ import annotations

from collections.abc import Mapping


def metadata(*names: str) -> bytes:
    """A version-1 metadata binary with ``names`` in id order (1- or 2-byte offsets)."""
    encoded = [n.encode() for n in names]
    offsets = [0]
    for e in encoded:
        offsets.append(offsets[-1] + len(e))
    size = 1 if max(offsets[-1], len(encoded)) <= 0xFF else 2
    head = bytes([0x01 | (size - 1) << 6])
    return head + b"".join(v.to_bytes(size, "little") for v in [len(encoded), *offsets]) + b"".join(encoded)


def short_string(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw) << 2 | 1]) + raw


def small_object(ids: Mapping[str, int], **fields: bytes) -> bytes:
    """An object of ``fields`` (name: encoded value), each name's dictionary id from ``ids``;
    1-byte ids and offsets, so under 256 bytes of values."""
    items = sorted(fields.items())
    body, offsets = b"", []
    for _, v in items:
        offsets.append(len(body))
        body += v
    return bytes([0x02, len(items), *[ids[k] for k, _ in items], *offsets, len(body)]) + body
