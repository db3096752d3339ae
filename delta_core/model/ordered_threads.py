"""Work run a few items ahead of its consumer on threads, in order (``map_ahead``,
``read_ahead``), or started on a thread for a later ask (``in_background``).

Arrow's Parquet reader and writer, JSON reader and compute functions release the GIL, so
parsing statistics slice by slice on a few threads (``map_ahead``) while the caller reads the
next slices, or reading the next pieces of a checkpoint (``read_ahead``) while the caller
encodes the previous ones, uses every core; items come back in order, and only a few are held.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar, cast

# Statistics slices parsed at once (one a core, at most four: each holds ~100 MB while parsed).
PARSE_THREADS = max(1, min(4, os.cpu_count() or 1))

T = TypeVar("T")
R = TypeVar("R")


def in_background(fn: Callable[[T], R], item: T, *, name: str) -> Future[R]:
    """``fn(item)`` started on a thread named ``name``, for a caller that asks for it later
    (``Future.result``) and meanwhile goes on: waits on other work, or does without it."""
    pool = ThreadPoolExecutor(1, thread_name_prefix=name)
    try:
        return pool.submit(fn, item)
    finally:
        pool.shutdown(wait=False)  # the thread ends with its one task


def map_ahead(fn: Callable[[T], R], items: Iterable[T], *, threads: int, name: str) -> Iterator[R]:
    """``fn(item)`` of each of ``items``, in order, up to ``threads`` of them computed at once
    on threads named ``name`` while the caller consumes the earlier results."""
    with ThreadPoolExecutor(threads, thread_name_prefix=name) as pool:
        pending: deque[Future[R]] = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) > threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def read_ahead(items: Iterable[T], *, depth: int, name: str) -> Iterator[T]:
    """The items of ``items``, in order, produced on a thread named ``name`` up to ``depth``
    ahead of the caller; an error raised producing them is raised here. A caller that stops
    early stops the thread (before its next item)."""
    held: queue.Queue[tuple[bool, T | None, BaseException | None]] = queue.Queue(max(1, depth))
    stopped = threading.Event()

    def put(entry: tuple[bool, T | None, BaseException | None]) -> bool:
        while not stopped.is_set():
            try:
                held.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        source = iter(items)
        try:
            for item in source:
                if not put((False, item, None)):
                    return
        except BaseException as error:  # noqa: BLE001  (handed to the consumer, raised there)
            put((True, None, error))
            return
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()  # a generator source (a map_ahead) releases its threads now
        put((True, None, None))

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    try:
        while True:
            done, item, error = held.get()
            if error is not None:
                raise error
            if done:
                return
            yield cast(T, item)  # an item, not the None of an end marker
    finally:
        stopped.set()
        thread.join()
