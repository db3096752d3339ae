"""Progress of long operations (rewrites, vacuum listing and deletes, checkpoints): stages with
items (files, actions) and bytes done, for a front end to show.

Progress is presentation, not a result, so like ``logging`` it is ambient rather than passed
down every call: a front end installs a ``ProgressSink`` for a block (``reporting_to``) and an
operation opens a ``stage`` where it loops over work; with no sink installed a stage does
nothing, so library callers and the Dagster assets pay nothing. The ``delta-core`` command line
installs a terminal bar (``delta_core.cli.progress``) only on a TTY and without ``--json``.
A ``ContextVar`` keeps one thread's (or task's) sink from leaking into another's.
Not part of the Delta protocol; no IO here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Protocol, TypeVar

T = TypeVar("T")


class ProgressSink(Protocol):
    """Receives the stages of an operation, one at a time."""

    def start(self, name: str, *, unit: str, total_items: int | None, total_bytes: int | None) -> None: ...

    def advance(self, *, items: int, nbytes: int) -> None: ...

    def finish(self) -> None: ...


_SINK: ContextVar[ProgressSink | None] = ContextVar("delta_core_progress", default=None)


class Stage:
    """One stage of an operation; ``advance`` as work completes (a no-op without a sink)."""

    __slots__ = ("_sink",)

    def __init__(self, sink: ProgressSink | None):
        self._sink = sink

    def advance(self, *, items: int = 0, nbytes: int = 0) -> None:
        if self._sink is not None:
            self._sink.advance(items=items, nbytes=nbytes)

    def end(self) -> None:
        """The stage is over (``reporting_to`` also ends one an error left open)."""
        if self._sink is not None:
            self._sink.finish()
            self._sink = None


def begin(name: str, *, unit: str = "files", total_items: int | None = None,
          total_bytes: int | None = None) -> Stage:
    """Start a stage reported to the installed sink (if any); ``end()`` it when done."""
    sink = _SINK.get()
    if sink is not None:
        sink.start(name, unit=unit, total_items=total_items, total_bytes=total_bytes)
    return Stage(sink)


def watching() -> bool:
    """Whether a sink is installed: skip work done only to report (e.g. looking up sizes)."""
    return _SINK.get() is not None


@contextlib.contextmanager
def stage(name: str, *, unit: str = "files", total_items: int | None = None,
          total_bytes: int | None = None) -> Iterator[Stage]:
    """A stage of work reported to the installed sink (if any), finished however it ends."""
    reported = begin(name, unit=unit, total_items=total_items, total_bytes=total_bytes)
    try:
        yield reported
    finally:
        reported.end()


def tracked(name: str, units: Sequence[T], *, items_of: Callable[[T], int], bytes_of: Callable[[T], int],
            unit: str = "files") -> Iterator[T]:
    """``units`` one by one, each reported done when the next is asked for (so a unit the loop
    skips with ``continue`` counts as done too): for loops whose body is long."""
    if not watching():
        yield from units
        return
    with stage(name, unit=unit, total_items=sum(items_of(u) for u in units),
               total_bytes=sum(bytes_of(u) for u in units)) as reported:
        for u in units:
            yield u
            reported.advance(items=items_of(u), nbytes=bytes_of(u))


@contextlib.contextmanager
def reporting_to(sink: ProgressSink | None) -> Iterator[None]:
    """Install ``sink`` for the stages opened inside the block (``None``: report nothing)."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)
        if sink is not None:
            sink.finish()  # a stage an error interrupted: its bar ends here
