"""``DeltaTable``: the entry point of the read path (docs/internal-api.md "Read path").

A table is a storage root; everything else is derived from its log on demand: snapshots by
version or timestamp, the latest version, history, the actions of one commit and the commits
after a version. Nothing is cached here except the storage, so every call sees the log as it
is now; callers that want to follow a table keep a ``Snapshot`` and call ``update()``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from typing import Any

from delta_core.errors import LogGapError, VersionNotFoundError
from delta_core.log.history import CommitRecord, history, ict_start_version, to_epoch_ms, version_at_timestamp
from delta_core.log.log_path import LogFileKind, commit_key
from delta_core.log.log_segment import latest_checkpoint_version, latest_version, list_log
from delta_core.log.snapshot import Snapshot, load_protocol_metadata, load_snapshot
from delta_core.model.actions import Action, Metadata, Protocol, parse_actions
from delta_core.model.clock import Clock, system_clock
from delta_core.model.table_properties import TableProperties
from delta_core.storage import open_storage
from delta_core.storage.base import Storage

Timestamp = int | float | dt.datetime | dt.date | str


class DeltaTable:
    """A Delta table at ``uri`` (local path or fsspec URI), or on a given ``storage``."""

    def __init__(
        self,
        uri: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        *,
        storage: Storage | None = None,
        clock: Clock = system_clock,
    ):
        if storage is None:
            if uri is None:
                raise TypeError("DeltaTable needs a uri or a storage")
            storage = open_storage(uri, storage_options)
        self._storage = storage
        self._uri = uri if uri is not None else storage.root
        self._clock = clock

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def storage(self) -> Storage:
        return self._storage

    @property
    def clock(self) -> Clock:
        """The time source (epoch ms) of every commit, expiry and retention on this table."""
        return self._clock

    # --- snapshots ----------------------------------------------------------------------

    def snapshot(self, version: int | None = None, *, timestamp: Timestamp | None = None) -> Snapshot:
        """The snapshot at ``version``, as of ``timestamp``, or the latest.

        A timestamp selects the latest version committed at or before it; one before the first
        commit raises ``VersionNotFoundError``, one after the latest commit
        ``TimestampAfterLatestCommitError`` (as Delta Spark's time travel).
        """
        if version is not None and timestamp is not None:
            raise TypeError("pass either version or timestamp, not both")
        if timestamp is not None:
            version = self.version_at(timestamp)
        return load_snapshot(self._storage, version=version, clock=self._clock)

    def version_at(self, timestamp: Timestamp) -> int:
        """The latest version committed at or before ``timestamp``; refused (see ``snapshot``)
        before the first commit or after the latest."""
        # Only the latest metadata is needed (which versions carry in-commit timestamps).
        _, metadata = load_protocol_metadata(self._storage)
        return version_at_timestamp(
            self._storage, to_epoch_ms(timestamp), configuration=metadata.configuration,
            ict_enabled=TableProperties(metadata.configuration).in_commit_timestamps, refuse_after_latest=True,
        )

    def protocol_and_metadata(self, version: int | None = None) -> tuple[Protocol, Metadata]:
        """The protocol and metadata at ``version`` (latest when ``None``) without reading the
        file actions: cheap on tables with millions of files."""
        return load_protocol_metadata(self._storage, version=version)

    def latest_version(self) -> int:
        """The newest version (commit or complete checkpoint), listing from the hint only."""
        return latest_version(self._storage)

    def last_checkpoint_version(self) -> int | None:
        """Version of the newest complete checkpoint, or ``None``."""
        return latest_checkpoint_version(self._storage)

    # --- commits ------------------------------------------------------------------------

    def history(self, limit: int | None = None) -> list[CommitRecord]:
        """``commitInfo`` per version, newest first; reads only the ``limit`` newest commits."""
        return history(self._storage, self.latest_version(), limit=limit, ict_start=self._ict_start)

    def _ict_start(self) -> int | None:
        # Only the latest metadata says from which version in-commit timestamps count.
        _, metadata = load_protocol_metadata(self._storage)
        return ict_start_version(metadata.configuration)

    def commit_actions(self, version: int) -> list[Action]:
        """Every action of commit ``version`` in file order."""
        key = commit_key(version)
        try:
            data = self._storage.read(key)
        except FileNotFoundError:
            raise VersionNotFoundError(
                f"commit {version} of {self._storage.root} does not exist (not yet written, or "
                "removed by log cleanup)", path=self._storage.root, version=version,
            ) from None
        return parse_actions(data, path=self._storage.uri(key), version=version)

    def changes_since(self, version: int) -> Iterator[tuple[int, list[Action]]]:
        """Commits after ``version``, ascending, each read when iterated.

        Lists from ``version + 1`` only, so the cost follows the number of new commits, not the
        size of the table or log. A missing commit in the range raises ``LogGapError``
        (the caller must resynchronise from a snapshot).
        """
        commits = [f for f in list_log(self._storage, start_version=version + 1)
                   if f.kind is LogFileKind.COMMIT]
        expected = version + 1
        for f in commits:
            if f.version != expected:
                raise LogGapError(
                    f"commit {expected} of {self._storage.root} is missing (removed by log cleanup?); "
                    f"changes after version {version} cannot be followed commit by commit: "
                    "resynchronise from the latest snapshot", path=self._storage.root, version=expected,
                )
            yield f.version, self.commit_actions(f.version)
            expected += 1

    def __repr__(self) -> str:
        return f"DeltaTable({self._uri!r})"
