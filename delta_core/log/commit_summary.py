"""What one commit did, summarised from its actions (PROTOCOL.md "Actions"): the protocol and
metadata it set, the files it added and removed, its ``txn`` and domain actions and its
``commitInfo``. Used by the conflict checker (``delta_core.write.conflict``) for each winning commit
and by anything watching the log for what changed. Pure: no IO.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from delta_core.model.actions import Action, Add, CommitInfo, DomainMetadata, Metadata, Protocol, Remove, Txn


@dataclass(frozen=True, slots=True)
class CommitSummary:
    """What one commit did, by action kind (its ``commitInfo`` as the raw object)."""

    version: int
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    added_files: tuple[Add, ...] = ()
    removed_files: tuple[Remove, ...] = ()
    app_txns: tuple[Txn, ...] = ()
    domains: tuple[DomainMetadata, ...] = ()
    commit_info: Mapping[str, object] | None = None

    @classmethod
    def from_actions(cls, version: int, actions: Iterable[Action]) -> CommitSummary:
        protocol = metadata = None
        adds: list[Add] = []
        removes: list[Remove] = []
        txns: list[Txn] = []
        domains: list[DomainMetadata] = []
        info: Mapping[str, object] | None = None
        for a in actions:
            if isinstance(a, Add):
                adds.append(a)
            elif isinstance(a, Remove):
                removes.append(a)
            elif isinstance(a, Txn):
                txns.append(a)
            elif isinstance(a, Metadata):
                metadata = a
            elif isinstance(a, Protocol):
                protocol = a
            elif isinstance(a, DomainMetadata):
                domains.append(a)
            elif isinstance(a, CommitInfo):
                info = a.values
        return cls(version, protocol, metadata, tuple(adds), tuple(removes), tuple(txns),
                   tuple(domains), info)

    @property
    def has_file_actions(self) -> bool:
        """The commit adds or removes files (with any ``dataChange``)."""
        return bool(self.added_files or self.removed_files)

    @property
    def changes_data(self) -> bool:
        """Some ``add``/``remove`` has ``dataChange=true`` (compaction and z-order commits do not)."""
        return any(a.data_change for a in self.added_files) or any(r.data_change for r in self.removed_files)

    @property
    def operation(self) -> str | None:
        """``commitInfo.operation`` (e.g. ``WRITE``, ``OPTIMIZE``), None when not recorded."""
        if self.commit_info is None or "operation" not in self.commit_info:
            return None
        return str(self.commit_info["operation"])

    @property
    def is_blind_append(self) -> bool:
        """The commit says it only appended without reading (``commitInfo.isBlindAppend``)."""
        return bool(self.commit_info and self.commit_info.get("isBlindAppend") is True)

    @property
    def txn_id(self) -> str | None:
        if not self.commit_info:
            return None
        value = self.commit_info.get("txnId")
        return value if isinstance(value, str) else None
