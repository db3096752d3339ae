"""Test helper: multi-part checkpoints as PROTOCOL.md "Multi-part checkpoint" requires them.

delta_core reads multi-part checkpoints but no longer writes them (deprecated; forbidden on
``v2Checkpoint`` tables). Tests that need one of a table they built use this helper, which
clusters the rows the way Delta Spark does: Spark's ``HashPartitioning`` on ``add.path``
(else ``remove.path``; the non-file actions have a null key), i.e. Spark's Murmur3 hash with
seed 42 taken modulo the number of parts. Every part is written with ``Storage.write``, then
``_last_checkpoint`` with ``parts``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_core.log.last_checkpoint import LastCheckpoint, encode_last_checkpoint
from delta_core.log.log_path import LAST_CHECKPOINT, multipart_checkpoint_key
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import build_checkpoint_table

_MASK = 0xFFFFFFFF
SPARK_HASH_SEED = 42


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix_k1(k1: int) -> int:
    return (_rotl((k1 * 0xCC9E2D51) & _MASK, 15) * 0x1B873593) & _MASK


def _mix_h1(h1: int, k1: int) -> int:
    return (_rotl(h1 ^ k1, 13) * 5 + 0xE6546B64) & _MASK


def spark_string_hash(text: str | None, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's ``hash(text)`` (``Murmur3_x86_32.hashUnsafeBytes``: whole 4-byte little-endian
    words, then each remaining byte, sign-extended, as a word of its own); null hashes to the seed."""
    if text is None:
        return seed
    data = text.encode("utf-8")
    h1 = seed & _MASK
    aligned = len(data) - len(data) % 4
    for i in range(0, aligned, 4):
        h1 = _mix_h1(h1, _mix_k1(int.from_bytes(data[i:i + 4], "little")))
    for b in data[aligned:]:
        h1 = _mix_h1(h1, _mix_k1((b - 256 if b > 127 else b) & _MASK))
    h1 ^= len(data)
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def write_multipart_checkpoint(table: DeltaTable, *, parts: int, version: int | None = None,
                               update_last_checkpoint: bool = True) -> list[str]:
    """Write a ``parts``-part checkpoint of ``version`` (latest by default); returns the part keys."""
    snapshot = table.snapshot(version)
    cp, _, n_add = build_checkpoint_table(snapshot)
    paths = pc.coalesce(pc.struct_field(cp["add"], "path"), pc.struct_field(cp["remove"], "path")).to_pylist()
    part_of = pa.array([spark_string_hash(p) % parts for p in paths])
    keys = [multipart_checkpoint_key(snapshot.version, i + 1, parts) for i in range(parts)]
    for i, key in enumerate(keys):
        sink = pa.BufferOutputStream()
        pq.write_table(cp.filter(pc.equal(part_of, i)), sink)
        table.storage.write(key, sink.getvalue().to_pybytes())
    if update_last_checkpoint:
        record = LastCheckpoint(version=snapshot.version, size=cp.num_rows, parts=parts, num_of_add_files=n_add)
        table.storage.write(LAST_CHECKPOINT, encode_last_checkpoint(record))
    return keys
