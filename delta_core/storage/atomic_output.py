"""Streamed output that becomes visible at its key only when complete (``Storage.open_atomic_output``).

A checkpoint file is read by anyone who lists ``_delta_log`` (PROTOCOL.md "Checkpoints": a
checkpoint must never be seen half-written), yet at a million files it is too big to build in
memory first. So it is streamed, and published in one atomic step by ``commit()``:

- local disk: the bytes go to a hidden temporary file beside the target (same directory, so same
  filesystem), then ``os.replace`` renames it over the target (atomic on POSIX);
- object stores: the upload completes only in ``commit()`` (S3: one PUT, or
  ``CompleteMultipartUpload``, both atomic per object; GCS and Azure likewise commit the object
  at the end), so readers see the previous object or the whole new one. ``memory://`` is a
  test store with no such guarantee.

``close()`` does not publish: writers close their streams on failure too (Arrow's buffered
stream closes its raw file even when its last flush failed), so only an explicit ``commit()``
after a clean ``close()`` publishes, and never after a failed write. ``discard()`` drops what was
written (removes the temporary file, aborts the multipart upload); writes after it (a writer's
destructor flushing late) are dropped. A checkpoint may replace an existing one of the same
version: Delta Spark overwrites checkpoints too, and both hold the same actions.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from typing import IO, Any


class AtomicOutput:
    """A write-only binary stream over ``raw``. ``commit`` closes ``raw`` (on object stores:
    completes the upload) and runs ``publish``; ``discard`` runs ``drop`` instead."""

    def __init__(self, raw: IO[bytes], *, publish: Callable[[], None] | None = None,
                 drop: Callable[[], None]) -> None:
        self._raw = raw
        self._publish = publish
        self._drop = drop
        self._failed = False  # a write or flush raised: the content is incomplete
        self._done = False  # committed or discarded
        self.closed = False

    def write(self, data: Any) -> int:
        if self._done:
            # A writer's destructor may still flush its buffer after discard(): drop it.
            return len(memoryview(data))
        written = False
        try:
            n = self._raw.write(data)
            written = True
            return n
        finally:
            self._failed |= not written  # the content is incomplete: never publish it

    def flush(self) -> None:
        if self._done:
            return
        flushed = False
        try:
            self._raw.flush()
            flushed = True
        finally:
            self._failed |= not flushed

    def tell(self) -> int:
        return self._raw.tell()

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        """The writer is done writing; nothing is published (see ``commit``)."""
        if not self.closed:
            self.closed = True
            self.flush()

    def commit(self) -> None:
        """Publish the file: from now on readers see it whole at its key."""
        if self._done or self._failed:
            raise ValueError("nothing to publish: the output was discarded or a write to it failed")
        self._done = True
        closed = False
        try:
            self._raw.close()  # object stores: completes the upload
            closed = True
        finally:
            if not closed:
                self._drop()
        if self._publish is not None:
            self._publish()

    def discard(self) -> None:
        """Drop everything written; nothing appears at the key (an older file there stays)."""
        if self._done:
            return
        self._done = self.closed = True
        self._drop()


def temp_path_beside(full: str) -> str:
    """A fresh hidden temporary file name in ``full``'s directory (same filesystem, so a rename
    or link onto ``full`` is atomic): ``.<name>.<uuid>.tmp``."""
    return os.path.join(os.path.dirname(full), f".{os.path.basename(full)}.{uuid.uuid4().hex}.tmp")


def local_atomic_output(full: str) -> AtomicOutput:
    """Write to a temporary file beside ``full`` (``temp_path_beside``); rename it over ``full``
    on commit."""
    tmp = temp_path_beside(full)
    raw = open(tmp, "wb")  # noqa: SIM115 - closed by AtomicOutput

    def publish() -> None:
        try:
            os.replace(tmp, full)
        except OSError:
            _unlink(tmp)
            raise

    def drop() -> None:
        try:
            raw.close()
        except OSError:
            pass  # flushing the rest failed: it is being thrown away anyway
        finally:
            _unlink(tmp)

    return AtomicOutput(raw, publish=publish, drop=drop)


def object_atomic_output(raw: IO[bytes]) -> AtomicOutput:
    """An fsspec object-store file (its upload completes when ``commit`` closes it);
    ``discard`` aborts the upload."""

    def drop() -> None:
        discard = getattr(raw, "discard", None)  # fsspec buffered files: aborts a multipart upload
        if discard is not None:
            discard()
        try:
            # Mark it closed so its destructor does not upload what is buffered.
            raw.closed = True  # type: ignore[misc]
        except AttributeError:
            pass  # an io-based file (memory://): no upload to hold back

    return AtomicOutput(raw, drop=drop)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


__all__ = ["AtomicOutput", "local_atomic_output", "object_atomic_output"]
