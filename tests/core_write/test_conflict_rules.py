"""Delta's conflict rules as pure functions over actions (no IO)."""

from __future__ import annotations

import pytest

from delta_core.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    MetadataChangedError,
    ProtocolChangedError,
    UnsupportedWriterFeatureError,
)
from delta_core.log.commit_summary import CommitSummary
from delta_core.model.actions import Add, CommitInfo, Metadata, Protocol, Remove, Txn
from delta_core.write.conflict import (
    SERIALIZABLE,
    SNAPSHOT_ISOLATION,
    WRITE_SERIALIZABLE,
    TransactionReadInfo,
    check_conflicts,
)


def add(path: str, *, part: str | None = None, data_change: bool = True) -> Add:
    return Add(path, {"p": part} if part is not None else {}, 10, 0, data_change)


def rm(path: str, *, data_change: bool = True) -> Remove:
    return Remove(path, 0, data_change)


def winner(*actions, blind: bool = False) -> CommitSummary:
    info = CommitInfo({"operation": "WRITE", "isBlindAppend": blind})
    return CommitSummary.from_actions(5, [info, *actions])


def txn(actions=(), **kw) -> TransactionReadInfo:
    return TransactionReadInfo(read_version=4, actions=list(actions), **kw)


def test_blind_appends_never_conflict():
    check_conflicts(txn([add("mine")]), winner(add("theirs"), blind=True))
    check_conflicts(txn([add("mine")]), winner(add("theirs")))


def test_append_into_read_partition_conflicts_under_serializable():
    t = txn([add("x", part="a")], read_predicates=[lambda pv: pv.get("p") == "a"])
    with pytest.raises(ConcurrentAppendError) as e:
        check_conflicts(t, winner(add("y", part="a"), blind=True))
    assert e.value.version == 5 and e.value.path == "y"
    # other partition: fine
    check_conflicts(t, winner(add("z", part="b"), blind=True))


def test_write_serializable_ignores_blind_appends():
    t = txn([add("x")], read_whole_table=True, isolation_level=WRITE_SERIALIZABLE)
    check_conflicts(t, winner(add("y"), blind=True))
    with pytest.raises(ConcurrentAppendError):
        check_conflicts(t, winner(add("y"), blind=False))


def test_rewrite_with_data_change_false_ignores_appends():
    t = txn([rm("old", data_change=False), add("new", data_change=False)], read_paths={"old"},
            read_whole_table=True)
    assert t.effective_isolation_level == SNAPSHOT_ISOLATION
    check_conflicts(t, winner(add("appended"), blind=True))


def test_rewrite_vs_delete_of_its_input_is_delete_read():
    t = txn([rm("old", data_change=False), add("new", data_change=False)], read_paths={"old"})
    with pytest.raises(ConcurrentDeleteReadError) as e:
        check_conflicts(t, winner(rm("old")))
    assert e.value.path == "old"


def test_delete_of_anything_conflicts_with_whole_table_read():
    with pytest.raises(ConcurrentDeleteReadError):
        check_conflicts(txn([add("x")], read_whole_table=True), winner(rm("other")))


def test_two_deletes_of_the_same_file():
    with pytest.raises(ConcurrentDeleteDeleteError):
        check_conflicts(txn([rm("f")]), winner(rm("f")))
    check_conflicts(txn([rm("f")]), winner(rm("g")))


def test_metadata_change_conflicts_with_everything():
    md = Metadata("id", '{"type":"struct","fields":[]}')
    with pytest.raises(MetadataChangedError):
        check_conflicts(txn([add("x")]), winner(md))


def test_same_app_id_conflicts():
    t = txn([add("x"), Txn("app", 3)], read_app_ids={"app"})
    with pytest.raises(ConcurrentTransactionError):
        check_conflicts(t, winner(Txn("app", 3), add("y")))
    check_conflicts(t, winner(Txn("other", 3), add("y"), blind=True))


def test_protocol_change_rules():
    # both change the protocol
    with pytest.raises(ProtocolChangedError):
        check_conflicts(txn([Protocol(1, 3)]), winner(Protocol(1, 3)))
    # winner upgraded to something we cannot write

    def refuse(p: Protocol) -> None:
        raise UnsupportedWriterFeatureError("nope")

    with pytest.raises(ProtocolChangedError):
        check_conflicts(txn([add("x")]), winner(Protocol(3, 7, (), ("fancy",))), check_write=refuse)
    # compatible upgrade: no conflict
    check_conflicts(txn([add("x")]), winner(Protocol(1, 3)), check_write=lambda p: None)


def test_rules_apply_in_delta_order():
    md = Metadata("id", '{"type":"struct","fields":[]}')
    t = txn([rm("f"), Txn("app", 1)], read_paths={"f"}, read_app_ids={"app"}, read_whole_table=True)
    with pytest.raises(MetadataChangedError):
        check_conflicts(t, winner(md, rm("f"), Txn("app", 1)))
    with pytest.raises(ConcurrentTransactionError):
        check_conflicts(t, winner(rm("f"), Txn("app", 1), add("n")))
    with pytest.raises(ConcurrentAppendError):
        check_conflicts(t, winner(rm("f"), add("n")))
    with pytest.raises(ConcurrentDeleteReadError):
        check_conflicts(t, winner(rm("f")))
    t2 = txn([rm("f")], isolation_level=SERIALIZABLE)
    with pytest.raises(ConcurrentDeleteDeleteError):
        check_conflicts(t2, winner(rm("f")))
