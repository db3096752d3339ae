"""A small-files target that compaction's own plan cannot reach passes with ``reachable: false``
and its reason, so the automation conditions request no compaction; a reachable one requests it.
Evaluated with ``dagster.evaluate_automation_conditions`` on a real instance over a real table
(``test_unreachable_checks.checked_and_requested``)."""

from __future__ import annotations

import pathlib

import pytest

from definitions import build_definitions
from tests.dagster.test_unreachable_checks import COMPACT, checked_and_requested


@pytest.mark.parametrize(("min_input_files", "reachable"), [(50, False), (5, True)])
def test_an_unreachable_compaction_target_requests_no_run(make_events_table, tables_yaml, min_input_files, reachable):
    events = pathlib.Path(make_events_table(rows=1200).uri)  # about a dozen small files in each of 3 days
    defs = build_definitions(tables_yaml(f"""
tables:
  events:
    uri: {events}
    compact: {{target_size: 128KB, min_input_files: {min_input_files}}}
    advisor: {{mode: auto}}
"""))
    small, requested = checked_and_requested(defs, "small_files")
    compact_requested = COMPACT in requested
    if reachable:  # a day's dozen fragments merge into one file each
        assert not small.passed and compact_requested
        assert "reachable" not in small.metadata
    else:  # no day has 50 small files, nor the bytes of one 96 KB file: nothing to merge
        assert small.passed and not compact_requested
        assert small.metadata["reachable"].value is False
        assert "compaction would merge nothing" in small.metadata["unreachable_reason"].value
