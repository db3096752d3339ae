"""Whether a compaction or a purge can bring its check back within the policy, predicted from
its own plan (``compaction_estimate``, ``purge_estimate``: unbounded by ``max_bytes``/``max_files``).

The advice asks for the rewrite, and its check fails, only when the threshold is crossed and the
prediction brings the figure back within it, or moves it by a stated minimum; otherwise the
check passes with the reason no run can reach the target (``reachable: false``), so automation
asks for no run that would change little:

- compaction counts the small files left after it (a bin whose files sum below ``min_file_size``
  writes a file that is still small): the small-file ratio and count within the policy's, or the
  ratio down by ``MIN_SMALL_RATIO_DROP`` (0.1), or at least the policy's ``min_input_files`` small
  files merged (as many as one bin of fragments must hold: 5 by default). Many partitions holding
  a small file or two each cannot get there, nor, once merged, less data than one file of the
  minimum size;
- purge counts the deleted rows left in the files at or under the per-file ratio: the
  deleted-rows ratio within the threshold, or down by ``MIN_DELETED_RATIO_DROP`` (0.05).
"""

from __future__ import annotations

from delta_core.health.metrics import HealthMetrics
from delta_core.health.policy import HealthPolicy
from delta_core.model.sizes import format_size

MIN_SMALL_RATIO_DROP = 0.1
MIN_DELETED_RATIO_DROP = 0.05


def small_files_crossed(m: HealthMetrics, policy: HealthPolicy) -> bool:
    """Whether the small files are over the policy's ratio or count."""
    return m.small_file_ratio > policy.compact_small_file_ratio or m.small_files > policy.compact_min_small_files


def small_files_after(m: HealthMetrics) -> tuple[int, int]:
    """``(small files, files)`` the compaction's plan leaves."""
    files = m.num_files - m.compactable_files + m.compaction_output_files
    return m.small_files - m.compaction_small_inputs + m.compaction_small_outputs, files


def compaction_unreachable(m: HealthMetrics, policy: HealthPolicy) -> str | None:
    """Why compaction cannot bring the small files within the policy or by the stated minimum
    (None: it can; only asked when ``small_files_crossed``)."""
    small, files = small_files_after(m)
    ratio = small / files if files else 0.0
    if ratio <= policy.compact_small_file_ratio and small <= policy.compact_min_small_files:
        return None
    if m.small_file_ratio - ratio >= MIN_SMALL_RATIO_DROP or m.compaction_small_inputs >= policy.min_input_files:
        return None
    if m.compactable_files == 0:
        return (f"compaction would merge nothing: the {m.small_files} small files lie in partitions with fewer than "
                f"{policy.min_input_files} fragments to merge or too few bytes for a file of "
                f"{format_size(m.min_file_size)}")
    return (f"compaction would leave {small} of {files} files small ({ratio:.0%}; now {m.small_file_ratio:.0%}): "
            f"{m.compaction_small_inputs} small files merged, fewer than {policy.min_input_files}, and under "
            f"{MIN_SMALL_RATIO_DROP:.0%} less: too little data or too many partitions to merge more")


def deleted_rows_crossed(m: HealthMetrics, policy: HealthPolicy) -> bool:
    """Whether the deleted rows are over the policy's ratio."""
    return m.deleted_rows > 0 and m.deleted_rows_ratio > policy.purge_deleted_rows_ratio


def deleted_ratio_after(m: HealthMetrics) -> float:
    """The deleted-rows ratio an automated purge leaves (its rewritten files lose their deleted rows)."""
    rows = m.num_records - m.purgeable_deleted_rows
    return (m.deleted_rows - m.purgeable_deleted_rows) / rows if rows > 0 else 0.0


def purge_unreachable(m: HealthMetrics, policy: HealthPolicy) -> str | None:
    """Why an automated purge cannot bring the deleted rows within the policy or by the stated
    minimum (None: it can; only asked when ``deleted_rows_crossed``)."""
    after = deleted_ratio_after(m)
    if after <= policy.purge_deleted_rows_ratio or m.deleted_rows_ratio - after >= MIN_DELETED_RATIO_DROP:
        return None
    return (f"a purge of the files with more than {policy.purge_file_ratio:.1%} of their rows deleted would leave "
            f"{after:.1%} deleted (now {m.deleted_rows_ratio:.1%}): the deleted rows are spread thin over many files")
