"""The fleet budget as an automation condition: declarative automation (``assets.automation``)
honours the limits of tables.yaml's ``fleet`` section as the fleet advisor does.

``WithinFleetBudget`` holds when ``fleet.budget.held_by`` holds nothing back at the evaluation
time: inside the fleet's windows, under ``max_concurrent_runs`` maintenance runs in progress,
and, for a rewrite (compact, zorder, cluster, purge), with room left in the hour's and the
day's byte budgets. A condition sees one asset, not its table's health, so a rewrite counts
with its tables.yaml ``max_bytes`` bound when it has one and else as one byte ("is there room
left"); the fleet advisor, which reads the health, counts its estimate. The instance is read
once per tick (one ``fleet_usage``, shared by every asset of the tick), so a tick over
many tables costs one usage query, not one per asset.
"""

from __future__ import annotations

from dagster import AssetKey, AutomationContext

from assets.automation import PredicateCondition
from assets.discovered import discovered_asset_key
from delta_core.health.priority import REWRITES
from fleet.budget import FleetUsage, held_by
from fleet.usage import FleetScope, fleet_scope, fleet_usage, max_bytes_bound
from resources.config import MaintenanceConfig, TableConfig


class WithinFleetBudget(PredicateCondition):
    """True while the fleet budget lets one more run of the asset start (module docstring)."""

    def __init__(self, config: MaintenanceConfig, scope: FleetScope | None = None, *,
                 discovered: TableConfig | None = None):
        super().__init__("within_fleet_budget",
                         description="The fleet limits of tables.yaml (fleet section) let one more maintenance "
                                     "run start: windows, concurrent runs, bytes rewritten per hour and day.",
                         label="within the fleet budget")
        self.policy = config.fleet
        self.scope = scope or fleet_scope(config.tables)
        tables = {table.name: table for table in config.tables}
        # ``discovered``: the record of one discover root's tables, counted on the partitioned assets
        self._rewrites = {key: _rewrite_bytes(tables[key.path[0]], key.path[-1])
                          for key in self.scope.assets if key.path[0] in tables}
        if discovered is not None:
            self._rewrites.update({discovered_asset_key(op): _rewrite_bytes(discovered, op)
                                   for op in discovered.operations})
        self._usage: tuple[object, FleetUsage] | None = None  # (the tick's asset graph view, usage)

    def usage(self, context: AutomationContext) -> FleetUsage:
        """The fleet's usage, read once per tick (a tick's evaluations share one asset graph view)."""
        view = context.asset_graph_view
        if self._usage is None or self._usage[0] is not view:
            self._usage = (view, fleet_usage(view.instance, self.scope, now=context.evaluation_time.timestamp()))
        return self._usage[1]

    def holds(self, context: AutomationContext) -> bool:
        if not isinstance(context.key, AssetKey):
            return True
        return held_by(self.policy, self.usage(context), rewrite_bytes=self._rewrites.get(context.key, 0),
                       now=context.evaluation_time.timestamp()) is None


def _rewrite_bytes(table: TableConfig, operation: str) -> int:
    """What an automated run of ``operation`` counts against the byte budgets."""
    if operation not in REWRITES:
        return 0
    return max_bytes_bound(table, operation) or 1
