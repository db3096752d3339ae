"""Synthetic click-stream events for the demo table (deterministic for a given seed)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa

EVENT_TYPES = ("view", "click", "add_to_cart", "purchase", "search")
START_DAY = dt.date(2024, 3, 1)

SCHEMA = pa.schema([
    ("event_id", pa.int64()),
    ("user_id", pa.int64()),
    ("event_type", pa.string()),
    ("amount", pa.float64()),
    ("ts", pa.timestamp("us", tz="UTC")),
    ("payload", pa.string()),
    ("event_date", pa.date32()),
])
PARTITION_COLUMNS = ("event_date",)


def event_batch(rows: int, *, days: int, first_id: int = 0, seed: int = 0) -> pa.Table:
    """``rows`` events spread over ``days`` consecutive days (one partition per day)."""
    rng = np.random.default_rng(seed)
    day_index = rng.integers(0, days, rows)
    seconds = rng.integers(0, 86_400, rows)
    base = np.datetime64(START_DAY.isoformat(), "s")
    ts = base + (day_index * 86_400 + seconds).astype("timedelta64[s]")
    types = np.array(EVENT_TYPES)[rng.integers(0, len(EVENT_TYPES), rows)]
    amount = np.round(rng.gamma(2.0, 20.0, rows), 2)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789"))
    payload = ["".join(letters[rng.integers(0, len(letters), 24)]) for _ in range(rows)]
    dates = np.datetime64(START_DAY.isoformat(), "D") + day_index.astype("timedelta64[D]")
    return pa.table({
        "event_id": pa.array(np.arange(first_id, first_id + rows), pa.int64()),
        "user_id": pa.array(rng.integers(1, 5_000, rows), pa.int64()),
        "event_type": pa.array(types.tolist(), pa.string()),
        "amount": pa.array(amount, pa.float64()),
        "ts": pa.array(ts.astype("datetime64[us]"), pa.timestamp("us", tz="UTC")),
        "payload": pa.array(payload, pa.string()),
        "event_date": pa.array(dates, pa.date32()),
    }, schema=SCHEMA)
