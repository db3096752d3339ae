"""``map_ahead`` and ``read_ahead``: results in order, errors raised to the consumer, and a
consumer that stops early leaves no thread behind."""

from __future__ import annotations

import threading

import pytest

from delta_core.model.ordered_threads import map_ahead, read_ahead


def _threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(name)]


def test_map_ahead_keeps_the_order_of_the_items():
    assert list(map_ahead(lambda x: x * x, range(100), threads=3, name="square")) == [x * x for x in range(100)]


def test_read_ahead_yields_every_item_in_order_from_another_thread():
    seen: list[str] = []

    def items():
        for i in range(50):
            seen.append(threading.current_thread().name)
            yield i

    assert list(read_ahead(items(), depth=2, name="reader")) == list(range(50))
    assert set(seen) == {"reader"} and not _threads("reader")


def test_read_ahead_raises_the_producers_error_after_the_items_before_it():
    def items():
        yield 1
        yield 2
        raise ValueError("the checkpoint is gone")

    got = []
    with pytest.raises(ValueError, match="the checkpoint is gone"):
        for item in read_ahead(items(), depth=4, name="failing"):
            got.append(item)
    assert got == [1, 2] and not _threads("failing")


def test_a_consumer_that_stops_early_stops_the_producer():
    produced: list[int] = []

    def items():
        for i in range(10_000):
            produced.append(i)
            yield i

    reader = read_ahead(map_ahead(lambda x: x, items(), threads=2, name="stopped-map"), depth=2, name="stopped")
    assert [next(reader) for _ in range(3)] == [0, 1, 2]
    reader.close()
    assert not _threads("stopped") and len(produced) <= 3 + 2 + 2 + 1
