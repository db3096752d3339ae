"""The soak's wasted-work attribution (``benchmarks.soak_waste``): each file maintenance wrote is put
down to the run and step going when it appeared, and each uncommitted one to its cause, so the
target figure (abandoned / committed) never counts the orphans of runs the soak itself killed."""

from __future__ import annotations

import pytest

from benchmarks.soak_waste import ABANDONED, FAILED, KILLED, NO_STEP, UNEXPLAINED, RunSteps, WrittenFile, attribute

RUNS = [
    # a run whose Z-order retried a batch after losing a conflict, whose compaction committed
    RunSteps("a", 100.0, False, ((101.0, "compact"), (105.0, "zorder"), (110.0, "checkpoint")),
             conflicted=frozenset({"zorder"})),
    # a run the soak killed during its Z-order
    RunSteps("b", 120.0, True, ((121.0, "compact"), (123.0, "zorder"))),
    # a run whose compaction failed
    RunSteps("c", 140.0, False, ((141.0, "compact"), (150.0, "zorder")), failed=frozenset({"compact"})),
]


def test_each_uncommitted_file_gets_its_runs_cause_and_its_steps_operation():
    files = [
        WrittenFile("c1", 10, 102.0, committed=True),  # compaction of run a
        WrittenFile("z1", 100, 106.0, committed=True),  # Z-order of run a, the retry that committed
        WrittenFile("z0", 40, 105.5, committed=False),  # Z-order of run a, the attempt that lost
        WrittenFile("k1", 30, 124.0, committed=False),  # run b, killed in its Z-order
        WrittenFile("k2", 5, 121.5, committed=False),  # run b, killed... its compaction's file too
        WrittenFile("f1", 7, 142.0, committed=False),  # run c's failed compaction
        WrittenFile("u1", 3, 151.0, committed=False),  # run c's Z-order neither conflicted nor failed
        WrittenFile("early", 2, 50.0, committed=False),  # before any run
    ]
    waste = attribute(files, RUNS)
    assert dict(waste.committed) == {"compact": 10, "zorder": 100}
    assert dict(waste.bytes) == {(ABANDONED, "zorder"): 40, (KILLED, "zorder"): 30, (KILLED, "compact"): 5,
                                 (FAILED, "compact"): 7, (UNEXPLAINED, "zorder"): 3, (UNEXPLAINED, NO_STEP): 2}
    assert (waste.cause_files(KILLED), waste.cause_bytes(KILLED)) == (2, 35)
    # the target figure is abandoned per committed byte; killed runs' orphans stay out of it
    assert waste.abandoned_ratio == pytest.approx(40 / 110)
    assert waste.uncommitted_ratio == pytest.approx(87 / 110)


def test_a_file_seen_after_its_run_ended_is_still_that_runs():
    # runs go one at a time: a file seen in the gap after run b (inotify lags) is run b's
    waste = attribute([WrittenFile("z", 8, 135.0, committed=False)], RUNS)
    assert dict(waste.bytes) == {(KILLED, "zorder"): 8}
    assert attribute([], RUNS).abandoned_ratio == 0.0
