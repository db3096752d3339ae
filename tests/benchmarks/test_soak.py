"""The soak benchmark end to end, for about a minute: delta-rs appender, deleter and updater
processes beside maintenance runs of the Dagster code location in their own processes, one of
them chosen to be killed; afterwards delta-rs and delta-kernel-rs both read exactly the rows the
writers' ledgers say, and maintenance committed."""

from __future__ import annotations

import pytest

from benchmarks.bench_soak import SoakOptions, print_report, run_soak
from benchmarks.soak_waste import KILLED, UNEXPLAINED

pytestmark = pytest.mark.slow


def test_a_minute_of_soak_keeps_every_row_and_maintenance_commits(tmp_path, capsys):
    # seed 10: the first run is left alone, the second is chosen to be killed (kill probability 0.5);
    # the writers' first 15 seconds leave removed files past the 10-second retention, so the first
    # run's policy vacuums (its rewrites may all lose to the deleter and updater)
    options = SoakOptions(minutes=1, kill_probability=0.5, seed=10, retention_seconds=10, warmup_seconds=15,
                          keep=str(tmp_path))
    result = run_soak(options)

    assert result.rows_expected > 0
    assert [c.engine for c in result.checks] == ["delta-rs", "delta-kernel-rs"]
    assert all(c.rows == result.rows_expected and c.equal for c in result.checks), result.checks
    # every commit a writer ledgered is in the log, and every writer commit in the log is ledgered
    assert (result.ledger_not_in_log, result.log_not_in_ledger) == (0, 0)
    assert all(stats is not None and stats.commits > 0 for stats in result.writer_stats.values())
    assert not result.crashed, [r.failures for r in result.crashed]
    assert not result.runs[0].killed and any(r.committed for r in result.runs)
    assert result.log is not None and sum(result.log.maintenance_commits.values()) > 0
    # rewrite amplification from the log: the bytes the maintenance commits added, per writer byte
    amp = result.amplification
    assert amp is not None and amp.writer_bytes > 0 and amp.maintenance_bytes == result.log.rewritten_bytes

    # every data file maintenance wrote (in a minute, quiet_minutes may leave nothing to rewrite) is put
    # down to a step; none it did not commit is unexplained
    waste = result.waste
    assert waste is not None and waste.cause_files(UNEXPLAINED) == 0
    assert set(waste.committed) <= {"compact", "zorder", "purge"}
    assert waste.cause_files(KILLED) == 0 or any(r.killed for r in result.runs)

    print_report(result)
    out = capsys.readouterr().out
    assert out.count("-> EQUAL") == 2 and "0 crashed (target 0)" in out
    assert "wasted work (issue 30: rewritten bytes abandoned, per committed rewritten byte)" in out
    assert "orphans of runs the soak killed" in out
