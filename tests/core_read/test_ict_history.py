"""History and time travel across in-commit timestamp enablement (PROTOCOL.md "In-Commit
Timestamps" > "Recommendations for Readers"): versions from
``delta.inCommitTimestampEnablementVersion`` on are timed by ``inCommitTimestamp``, earlier
ones by file modification time, even when an earlier commit carries an ``inCommitTimestamp``
from a period when the feature was on before."""

from __future__ import annotations

import os

from delta_core.log.table import DeltaTable
from tests.core_read.conftest import add, commit_info, metadata, protocol

T0 = 1_700_000_000_000
ICT_PROTOCOL = protocol(1, 7, writerFeatures=["inCommitTimestamp"])


def _set_mtime(path, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def _on_off_on(log_writer) -> None:
    """v0 created with ICT on (its ICT far from its file time), v1 turns ICT off, v2 turns it
    on again (enablement version 2), v3 appends."""
    on = {"delta.enableInCommitTimestamps": "true"}
    again = {**on, "delta.inCommitTimestampEnablementVersion": "2",
             "delta.inCommitTimestampEnablementTimestamp": str(T0 + 500)}
    p0 = log_writer.commit(0, commit_info("CREATE", inCommitTimestamp=T0 + 5_000_000), ICT_PROTOCOL,
                           metadata(configuration=on), add("a"))
    p1 = log_writer.commit(1, commit_info("SET TBLPROPERTIES"),
                           metadata(configuration={"delta.enableInCommitTimestamps": "false"}))
    p2 = log_writer.commit(2, commit_info("SET TBLPROPERTIES", inCommitTimestamp=T0 + 500),
                           metadata(configuration=again))
    p3 = log_writer.commit(3, commit_info(inCommitTimestamp=T0 + 900), add("b"))
    for p, ms in ((p0, T0 + 100), (p1, T0 + 200), (p2, T0 + 9_000_000), (p3, T0 + 9_000_001)):
        _set_mtime(p, ms)


def test_history_times_versions_before_enablement_by_file_time(log_writer) -> None:
    _on_off_on(log_writer)
    table = DeltaTable(str(log_writer.root))
    assert [(r.version, r.timestamp) for r in table.history()] == [
        (3, T0 + 900), (2, T0 + 500), (1, T0 + 200), (0, T0 + 100)]
    # time travel agrees with history on every version
    for record in table.history():
        assert table.snapshot(timestamp=record.timestamp).version == record.version


def test_history_uses_file_times_when_ict_is_off_now(log_writer) -> None:
    on = {"delta.enableInCommitTimestamps": "true"}
    p0 = log_writer.commit(0, commit_info("CREATE", inCommitTimestamp=T0 + 5_000_000), ICT_PROTOCOL,
                           metadata(configuration=on), add("a"))
    p1 = log_writer.commit(1, commit_info("SET TBLPROPERTIES"),
                           metadata(configuration={"delta.enableInCommitTimestamps": "false"}))
    _set_mtime(p0, T0 + 100)
    _set_mtime(p1, T0 + 200)
    table = DeltaTable(str(log_writer.root))
    assert [r.timestamp for r in table.history()] == [T0 + 200, T0 + 100]
    assert table.snapshot(timestamp=T0 + 150).version == 0
