"""Does an S3-compatible store honour ``If-None-Match: *``? Probed once per process and bucket.

Commits are created with a conditional PUT (DESIGN "Storage contract"; PROTOCOL.md
"Delta Log Entries": a commit file is written only if it does not exist yet — mutual exclusion
of writers relies on it). Some S3-compatible servers accept the header and silently ignore it:
two writers can then both create version N and one commit is lost without an error. Before the
first commit to a bucket this process makes, ``check_conditional_put`` puts one probe key under
the table's ``_delta_log/`` twice with create-if-absent and deletes it. If the second PUT
succeeds, the store is unsafe for commits: every commit to that bucket raises
``UnsafeStoreError`` naming the store, unless the storage was opened with
``allow_unsafe_commits=True`` (then the probe is not run at all).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable

from delta_core.errors import UnsafeStoreError

log = logging.getLogger(__name__)

PROBE_PREFIX = "_delta_log/.delta-core-conditional-put-probe-"

_lock = threading.Lock()
# (endpoint, bucket) -> True when a second create-if-absent PUT was refused as it must be.
_verdicts: dict[tuple[str, str], bool] = {}


def check_conditional_put(
    store: tuple[str, str],
    *,
    name: str,
    put_if_absent: Callable[[str, bytes], None],
    delete: Callable[[str], None],
) -> None:
    """Raise ``UnsafeStoreError`` if ``store`` (endpoint, bucket) ignores create-if-absent.

    ``put_if_absent(key, data)`` is the store's raw conditional PUT of a table-relative key
    (raising ``FileExistsError`` when the key exists); ``delete(key)`` removes a key. The first
    call per ``store`` probes; later calls reuse the verdict.
    """
    with _lock:  # one probe per bucket even when threads commit at once
        honoured = _verdicts.get(store)
        if honoured is None:
            honoured = _probe(put_if_absent, delete)
            _verdicts[store] = honoured
            log.info("conditional PUT probe of %s: If-None-Match %s", name,
                     "honoured" if honoured else "IGNORED")
    if not honoured:
        endpoint, bucket = store
        raise UnsafeStoreError(
            f"the S3 store {name} (bucket {bucket!r} at {endpoint}) ignores conditional writes "
            "(If-None-Match: *): a second create-if-absent PUT of the same key succeeded, so two "
            "writers could both create the same version and one commit would be lost. Nothing was "
            "committed. Use a store that honours conditional writes; if only one writer ever commits to "
            "this table, the Python API can open it anyway (open_storage(uri, options, "
            "allow_unsafe_commits=True))",
            path=name,
        )


def _probe(put_if_absent: Callable[[str, bytes], None], delete: Callable[[str], None]) -> bool:
    key = f"{PROBE_PREFIX}{uuid.uuid4().hex}"
    try:
        put_if_absent(key, b"first")
        try:
            put_if_absent(key, b"second")
        except FileExistsError:
            return True
        return False
    finally:
        delete(key)
