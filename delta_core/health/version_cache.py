"""Predictions kept per table version in this process: a version's checks, advice and automation
ticks plan once (``layout_estimate``, ``compaction_estimate``); another process plans again.

A key names the table (its storage root) and the log segment the snapshot was read from (its
version, and the listed sizes and times of its files: a table deleted and created again at the same
place is another table), then whatever else the prediction depends on (``snapshot_key``). A
version's log never changes (PROTOCOL.md "Delta Log Entries"), so an entry is never stale, only
evicted (least recently stored first).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

V = TypeVar("V")


def snapshot_key(snapshot: Snapshot, *rest: Hashable) -> tuple[Hashable, ...]:
    """The key of a prediction on ``snapshot`` that also depends on ``rest``."""
    return (snapshot.storage.root, snapshot.log_segment, *rest)


class VersionCache(Generic[V]):
    """At most ``entries`` predictions, by key."""

    def __init__(self, entries: int = 256) -> None:
        self._entries = entries
        self._values: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The value stored under ``key``, computed (and stored) the first time."""
        found = self._values.get(key)
        if found is None:
            found = self._values[key] = compute()
            if len(self._values) > self._entries:
                self._values.popitem(last=False)
        return found
