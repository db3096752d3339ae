"""The data version of ``<table>/delta_table``: the newest Delta version whose commit changed data.

Dagster marks an asset "Unsynced" when an upstream data version moved since it was last
materialized. Maintenance commits (OPTIMIZE, Z-order, purge) set ``dataChange=false`` on their
``add``/``remove`` actions (PROTOCOL.md "Add File and Remove File": the data did not change,
files were only rearranged), so they must not move the data version — else every compaction
would show the maintenance assets and every user asset of the table as unsynced. Commits
without file actions (checkpoints are not commits; property changes, clustering columns) do
not move it either.

Cursor-based: the previous observation of the asset (its Delta version in the ``delta_version``
metadata entry and its data version) is the cursor, and only the commits after it are read,
newest first, stopping at the first that changed data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dagster import AssetKey, DagsterInstance

from delta_core.errors import VersionNotFoundError
from delta_core.log.commit_summary import CommitSummary

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

DELTA_VERSION_KEY = "delta_version"  # the observation metadata entry holding the Delta version


@dataclass(frozen=True, slots=True)
class PreviousObservation:
    delta_version: int
    data_version: int


def previous_observation(instance: DagsterInstance, asset_key: AssetKey, *,
                         partition: str | None = None) -> PreviousObservation | None:
    """The last recorded (Delta version, data version) of the table asset (of its ``partition``: a
    discovered table), None when there is none or it predates this scheme (its data version was
    not a Delta version)."""
    record = instance.get_latest_data_version_record(asset_key, partition_key=partition)
    if record is None or record.asset_observation is None:
        return None
    observation = record.asset_observation
    entry = observation.metadata.get(DELTA_VERSION_KEY)
    delta_version = entry.value if entry is not None and isinstance(entry.value, int) else None
    try:
        data_version = int(observation.data_version) if observation.data_version is not None else None
    except ValueError:
        return None
    if delta_version is None or data_version is None or data_version > delta_version:
        return None
    return PreviousObservation(delta_version=delta_version, data_version=data_version)


def data_change_version(dt: DeltaTable, latest: int, *, previous: PreviousObservation | None,
                        known: Mapping[int, bool] | None = None) -> int:
    """The newest version ``<= latest`` whose commit changed data.

    ``known`` maps versions already read (the sensor's batch) to whether they changed data.
    A table recreated below the previous observation is scanned afresh. A commit that cannot be
    read (log cleanup) is taken as a data change at ``latest``: a needless refresh is better than
    a missed one.
    """
    known = known or {}
    if previous is not None and previous.delta_version > latest:
        previous = None
    stop = previous.delta_version if previous is not None else -1
    for version in range(latest, stop, -1):
        if version in known:
            changed = known[version]
        else:
            try:
                changed = CommitSummary.from_actions(version, dt.commit_actions(version)).changes_data
            except VersionNotFoundError:
                return latest
        if changed:
            return version
    if previous is not None:
        return previous.data_version
    return 0  # no commit ever changed data: the table as created
