"""Writing the version checksum (``<version>.crc``) after a commit (PROTOCOL.md "Version
Checksum File" > "Writer Requirements").

The checksum must describe the state after Action Reconciliation at the committed version. A
transaction already holds almost all of it: the state of the snapshot it read, plus the commits
that won before it (read for the conflict check) and its own commit. ``state_after_commits``
reconciles just those commits onto the held state, in memory — the same incremental step as
``Snapshot.update``, without reading or replaying the log again.

The file is created with ``put_if_absent``: the protocol forbids overwriting a ``.crc``, and
another writer may have produced one for this version already. The commit is durable before
this runs, so a failure here is logged and never fails the commit (``.crc`` files are
optional for readers).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from delta_core.errors import CommitStateUnknownError, FileAlreadyExistsError, StorageError
from delta_core.log.commit_read import ParsedCommit, build_batch
from delta_core.log.replay import ReplayState, reconcile
from delta_core.log.version_checksum import VersionChecksum, checksum_key, checksum_of_state
from delta_core.model.table_properties import TableProperties
from delta_core.storage.base import Storage

log = logging.getLogger(__name__)


def state_after_commits(storage: Storage, base: ReplayState, commits: Sequence[ParsedCommit]) -> ReplayState:
    """``base`` (the read snapshot's state) with ``commits`` (ascending, ending with the new
    commit) applied; file paths matched canonically under the storage root, as replay does."""
    return reconcile(base, build_batch(commits, source=storage.root), table_root=storage.root)


def checksum_after_commit(storage: Storage, base: ReplayState, commits: Sequence[ParsedCommit]) -> VersionChecksum:
    """The ``.crc`` content for the version of ``commits[-1]``."""
    state = state_after_commits(storage, base, commits)
    own = commits[-1]
    info = own.commit_info
    assert state.metadata is not None
    return checksum_of_state(
        state,
        txn_id=info.get("txnId") if info is not None else None,
        in_commit_timestamp=info.in_commit_timestamp if info is not None else None,
        # With a txn retention, which txns are live depends on when one asks: leave the
        # optional field out rather than record a set that readers would compute differently.
        include_txns=TableProperties(state.metadata.configuration).set_transaction_retention is None,
    )


def write_version_checksum(storage: Storage, version: int, checksum: VersionChecksum, *,
                           table_uri: str) -> bool:
    """Create ``<version>.crc`` unless one exists; ``True`` if this call wrote it."""
    key = checksum_key(version)
    try:
        storage.put_if_absent(key, checksum.encode())
    except FileAlreadyExistsError:
        log.info("table=%s version=%d a version checksum exists already; left as it is", table_uri, version)
        return False
    except (StorageError, CommitStateUnknownError, OSError) as exc:
        log.warning("table=%s version=%d writing the version checksum failed (the commit stands): %s",
                    table_uri, version, exc)
        return False
    return True
