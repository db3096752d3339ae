"""The soak's delta-rs writers, each in its own process: an appender, a deleter and an updater.

Each writer loops until told to stop and keeps a ledger, one JSON line per commit it saw
succeed, so the rows the table must hold are computed at the end from the ledgers alone
(``expected_rows``):

- the appender writes ids ``[lo, hi)`` (each id's row is fixed by ``soak_rows``) and then
  raises the shared high-water mark to ``hi``;
- the deleter deletes ``lo <= id < hi`` below the high-water mark (delta-rs ``delete``);
- the updater sets ``v = value`` on ``lo <= id < hi`` below it (delta-rs ``update``), with a
  fresh value each time. It is the only updater, so its ledger is in commit order and the
  last update of an id wins; deletes are final.

A commit delta-rs refuses (``CommitFailedError``: a conflict, e.g. with a maintenance rewrite
of the same files) changes nothing and is counted, not ledgered. Processes are started with
the ``spawn`` method (a process forked after deltalake was used in it can hang).
"""

from __future__ import annotations

import json
import pathlib
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

# A row's values follow from its id, so the expected table needs no copy of the data.
_K_MULTIPLIER = 2654435761  # Knuth's multiplicative hash: k spreads ids over 0..999
K_RANGE = 1000
MAX_SAMPLES = 3


def soak_rows(ids: np.ndarray, *, rows_per_day: int, v: np.ndarray | None = None) -> pa.Table:
    """The rows of ``ids``: ``k`` a hash of the id, ``s`` its text, ``v`` 0 unless given,
    partitioned by ``day = id // rows_per_day``."""
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({
        "id": pa.array(ids),
        "k": pa.array((ids * _K_MULTIPLIER) % K_RANGE),
        "s": pa.array([f"row-{i:010d}" for i in ids.tolist()], pa.string()),
        "v": pa.array(np.zeros(len(ids), np.int64) if v is None else np.asarray(v, np.int64)),
        "day": pa.array(ids // rows_per_day),
    })


@dataclass(frozen=True, slots=True)
class WriterSettings:
    """What the three writers share."""

    uri: str
    work: str  # ledgers and stats go here
    rows_per_day: int
    append_rows: int
    append_interval: float  # seconds
    delete_interval: float
    update_interval: float
    seed: int
    retention_seconds: int
    delete_span: int = 20  # ids per delete
    update_span: int = 100  # ids per update

    @property
    def configuration(self) -> dict[str, str]:
        """The soak table's properties: checkpoints and log clean-up are left to maintenance, and
        removed files may be vacuumed after ``retention_seconds`` (the writers' snapshots are fresher)."""
        return {"delta.checkpointInterval": "1000000",
                "delta.deletedFileRetentionDuration": f"interval {self.retention_seconds} seconds"}

    def ledger(self, name: str) -> pathlib.Path:
        return pathlib.Path(self.work, f"{name}.ledger.jsonl")

    def stats(self, name: str) -> pathlib.Path:
        return pathlib.Path(self.work, f"{name}.stats.json")


@dataclass(slots=True)
class WriterStats:
    commits: int = 0
    conflicts: int = 0  # CommitFailedError: nothing committed
    errors: int = 0  # other deltalake or OS errors: nothing ledgered
    conflict_samples: list[str] = field(default_factory=list)
    error_samples: list[str] = field(default_factory=list)


def _sample(samples: list[str], exc: BaseException) -> None:
    """Keep the first line of a few distinct errors."""
    text = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    if len(samples) < MAX_SAMPLES and text not in samples:
        samples.append(text)


def _loop(name: str, settings: WriterSettings, stop: Any, interval: float,
          step: Callable[[], dict[str, Any] | None]) -> None:
    """Call ``step`` every ``interval`` seconds until ``stop`` is set; ledger what it returns."""
    from deltalake.exceptions import CommitFailedError, DeltaError

    stats = WriterStats()
    with settings.ledger(name).open("a", encoding="utf-8") as ledger:
        while not stop.is_set():
            try:
                entry = step()
            except CommitFailedError as exc:
                stats.conflicts += 1
                _sample(stats.conflict_samples, exc)
            except (DeltaError, OSError) as exc:
                stats.errors += 1
                _sample(stats.error_samples, exc)
            else:
                if entry is not None:
                    ledger.write(json.dumps(entry) + "\n")
                    ledger.flush()
                    stats.commits += 1
            stop.wait(interval)
    settings.stats(name).write_text(json.dumps(asdict(stats)), encoding="utf-8")


def _properties(op: str) -> dict[str, Any]:
    """A writer call's commit tag (the ledger is checked against the log's tags) and Parquet
    settings: ZSTD, so its files are told from maintenance's (Snappy) by name."""
    from deltalake import CommitProperties, WriterProperties

    return {"commit_properties": CommitProperties(custom_metadata={"soak": op}),
            "writer_properties": WriterProperties(compression="ZSTD")}


def append_loop(settings: WriterSettings, stop: Any, high_water: Any) -> None:
    """Append ``append_rows`` new ids per commit; the first commit creates the table."""
    import deltalake

    next_id = 0

    def step() -> dict[str, Any]:
        nonlocal next_id
        lo, hi = next_id, next_id + settings.append_rows
        next_id = hi  # a failed append's ids are skipped, never written twice
        deltalake.write_deltalake(settings.uri, soak_rows(np.arange(lo, hi), rows_per_day=settings.rows_per_day),
                                  mode="append", partition_by=["day"], configuration=settings.configuration,
                                  **_properties(f"append {lo}-{hi}"))
        high_water.value = hi
        return {"lo": lo, "hi": hi}

    _loop("appender", settings, stop, settings.append_interval, step)


def _span(rng: random.Random, high_water: Any, width: int) -> tuple[int, int] | None:
    """A random id range below the high-water mark (all committed), or None before there is one."""
    top = high_water.value
    if top < width:
        return None
    lo = rng.randrange(0, top - width + 1)
    return lo, lo + width


def delete_loop(settings: WriterSettings, stop: Any, high_water: Any) -> None:
    """Delete a random range of earlier ids per commit (delta-rs rewrites the files holding them)."""
    import deltalake

    rng = random.Random(settings.seed * 7 + 1)

    def step() -> dict[str, Any] | None:
        span = _span(rng, high_water, settings.delete_span)
        if span is None:
            return None
        lo, hi = span
        metrics = deltalake.DeltaTable(settings.uri).delete(
            f"id >= {lo} and id < {hi}", **_properties(f"delete {lo}-{hi}"))
        return {"lo": lo, "hi": hi, "deleted": metrics.get("num_deleted_rows")}

    _loop("deleter", settings, stop, settings.delete_interval, step)


def update_loop(settings: WriterSettings, stop: Any, high_water: Any) -> None:
    """Set ``v`` to a fresh value on a random range of earlier ids per commit."""
    import deltalake

    rng = random.Random(settings.seed * 7 + 2)
    value = 0

    def step() -> dict[str, Any] | None:
        nonlocal value
        span = _span(rng, high_water, settings.update_span)
        if span is None:
            return None
        lo, hi = span
        value += 1
        metrics = deltalake.DeltaTable(settings.uri).update(
            new_values={"v": value}, predicate=f"id >= {lo} and id < {hi}",
            **_properties(f"update {lo}-{hi}={value}"))
        return {"lo": lo, "hi": hi, "value": value, "updated": metrics.get("num_updated_rows")}

    _loop("updater", settings, stop, settings.update_interval, step)


WRITERS: dict[str, Callable[[WriterSettings, Any, Any], None]] = {
    "appender": append_loop, "deleter": delete_loop, "updater": update_loop}


def read_ledger(settings: WriterSettings, name: str) -> list[dict[str, Any]]:
    path = settings.ledger(name)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def read_stats(settings: WriterSettings, name: str) -> WriterStats | None:
    """The writer's counters, None if it ended without writing them (it crashed)."""
    path = settings.stats(name)
    return WriterStats(**json.loads(path.read_text(encoding="utf-8"))) if path.exists() else None


def expected_rows(settings: WriterSettings) -> pa.Table:
    """The rows the table must hold by the ledgers, sorted by id."""
    appended = read_ledger(settings, "appender")
    if not appended:
        return soak_rows(np.arange(0), rows_per_day=settings.rows_per_day)
    top = max(e["hi"] for e in appended)
    present = np.zeros(top, dtype=bool)
    for e in appended:
        present[e["lo"]:e["hi"]] = True
    for e in read_ledger(settings, "deleter"):
        present[e["lo"]:e["hi"]] = False
    v = np.zeros(top, dtype=np.int64)
    for e in read_ledger(settings, "updater"):  # in commit order: the last update wins
        v[e["lo"]:e["hi"]] = e["value"]
    ids = np.flatnonzero(present)
    return soak_rows(ids, rows_per_day=settings.rows_per_day, v=v[ids])
