"""Issue 9 §8: ``describe`` shows each ``txn`` with its ``lastUpdated`` and whether it has
expired under ``delta.setTransactionRetentionDuration``; ``txn`` keeps the unexpired
``{appId: version}`` map that Delta Spark, delta-kernel-rs and delta-rs replay."""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import time

import pyarrow as pa

from delta_core.cli.main import main
from delta_core.model.clock import iso_time
from delta_core.write.table_writes import append, create_table

DAY_MS = 24 * 3600 * 1000


def _table(root: str) -> int:
    """A table with a fresh txn and one last updated three days ago; returns that time."""
    t = create_table(root, pa.schema([("id", pa.int64())]),
                     properties={"delta.setTransactionRetentionDuration": "interval 1 days"})
    append(t, pa.table({"id": [1]}), app_id="fresh", app_version=2)
    version = append(t, pa.table({"id": [2]}), app_id="old", app_version=5).version
    old = int(time.time() * 1000) - 3 * DAY_MS
    log = pathlib.Path(root, "_delta_log", f"{version:020d}.json")
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    for obj in lines:
        if "txn" in obj:
            obj["txn"]["lastUpdated"] = old  # as if the application stopped writing back then
    log.write_text("".join(json.dumps(o) + "\n" for o in lines))
    return old


def test_describe_json_keeps_live_txns_and_details_every_txn(tmp_path, capsys):
    root = str(tmp_path / "t")
    old = _table(root)
    assert main(["describe", root, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["txn"] == {"fresh": 2}
    details = out["txn_details"]
    assert set(details) == {"fresh", "old"}
    assert details["old"] == {"version": 5, "last_updated": iso_time(old), "expired": True}
    assert details["fresh"]["expired"] is False and details["fresh"]["version"] == 2
    fresh = dt.datetime.fromisoformat(details["fresh"]["last_updated"])  # ISO 8601, never epoch ms
    assert abs(fresh.timestamp() * 1000 - time.time() * 1000) < DAY_MS


def test_describe_text_shows_last_updated_and_expiry(tmp_path, capsys):
    root = str(tmp_path / "t")
    old = _table(root)
    assert main(["describe", root]) == 0
    text = capsys.readouterr().out
    when = dt.datetime.fromtimestamp(old / 1000, tz=dt.UTC).isoformat(timespec="milliseconds")
    assert "App transactions: (delta.setTransactionRetentionDuration = interval 1 days)" in text
    assert f"  old: version 5, last updated {when}, expired" in text
    fresh = next(line for line in text.splitlines() if line.startswith("  fresh:"))
    assert fresh.startswith("  fresh: version 2, last updated ") and "expired" not in fresh
