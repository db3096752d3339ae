"""Table health (``delta_core.health``) as Dagster metadata: numeric entries the UI plots over
time, and a Markdown table of recommendations.

The health model reads the log only (PROTOCOL.md "Checkpoints", "Add File and Remove File",
"Deletion Vectors"): no data files, no listing. The observable table asset reports it on each
new version; maintenance assets report it before and after their operation. Every evaluation
in the code location shares one health cache (``health_cache``: ``$DELTA_HEALTH_CACHE``, else
the instance's storage directory), so a version is replayed once whatever evaluates it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from dagster import DagsterInstance, MetadataValue

from delta_core.health.cache import HealthCache, health_cache_from_env
from delta_core.health.policy import HealthPolicy
from delta_core.health.report import HealthReport, table_health
from delta_core.maintenance.operations import ZORDER
from delta_core.maintenance.options import ZOrderOptions
from resources.config import TableConfig

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable

# Prefix of the metadata keys of the health figures (``HealthReport.headline`` names follow it).
HEALTH_PREFIX = "health_"


def health_policy(table: TableConfig) -> HealthPolicy:
    """The table's thresholds from tables.yaml, the same the advisor sensor acts on: its
    ``advisor`` section, compaction's target and small-file sizes, and ``checkpoint.interval``
    when written (else the table's ``delta.checkpointInterval``)."""
    return table.advisor.health


def health_columns(table: TableConfig) -> Sequence[str] | None:
    """The columns clustering is judged on: the Z-order columns when Z-order is configured, else
    None (the table's liquid clustering columns, if any)."""
    columns = table.options(ZOrderOptions).columns
    return columns if table.enabled(ZORDER.name) and columns else None


# The health cache's directory below the Dagster instance's storage directory.
HEALTH_CACHE_DIR = "delta_health_cache"


def health_cache(instance: DagsterInstance) -> HealthCache | None:
    """The code location's health cache (``delta_core.health.cache``): ``$DELTA_HEALTH_CACHE``,
    else ``delta_health_cache`` in ``instance``'s storage directory, which its runs, sensors and
    check evaluations share."""
    return health_cache_from_env(default=os.path.join(instance.storage_directory(), HEALTH_CACHE_DIR))


def table_health_report(dt: DeltaTable, table: TableConfig, *, snapshot: Snapshot | None = None,
                        cache: HealthCache | None = None) -> HealthReport:
    """Health of ``dt`` judged by ``table``'s settings (``health_policy``, ``health_columns``)."""
    return table_health(dt, policy=health_policy(table), columns=health_columns(table), snapshot=snapshot,
                        cache=cache)


def recommendations_markdown(report: HealthReport) -> str:
    if not report.recommendations:
        return f"**Health {report.score}/100 at version {report.version}**: nothing to do."
    lines = [f"**Health {report.score}/100 at version {report.version}**", "",
             "| operation | reason | estimated gain |", "|---|---|---:|"]
    for r in report.recommendations:
        gain = f"{r.estimated_gain:g} {r.unit}"
        lines.append(f"| {r.operation} | {r.reason.replace('|', '/')} | {gain} |")
    return "\n".join(lines)


def _figure(value: int | float) -> MetadataValue:
    return MetadataValue.int(value) if isinstance(value, int) else MetadataValue.float(float(value))


def health_metadata(report: HealthReport, *, suffix: str = "") -> dict[str, MetadataValue]:
    """``health_<figure><suffix>`` numeric entries (figures not computed are left out, so a plot
    has no fake zero) and ``health_recommendations<suffix>``."""
    out: dict[str, MetadataValue] = {
        f"{HEALTH_PREFIX}{name}{suffix}": _figure(value)
        for name, value in report.headline().items() if value is not None and not isinstance(value, bool)}
    out[f"{HEALTH_PREFIX}recommendations{suffix}"] = MetadataValue.md(recommendations_markdown(report))
    return out


def health_before_after(before: HealthReport, after: HealthReport) -> dict[str, MetadataValue]:
    """Health entries suffixed ``_before`` and ``_after`` (a maintenance asset's materialization)."""
    return health_metadata(before, suffix="_before") | health_metadata(after, suffix="_after")
