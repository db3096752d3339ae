"""Table health as Dagster asset checks on ``<table>/delta_table``: one check per named part
(``delta_core.health.check_names``; the check name is that name), judged by
``delta_core.health.checks`` with the table's thresholds from tables.yaml (``health_policy``: the
advisor's), so the catalog, ``delta-core health --json`` and automation agree.

One ``multi_asset_check`` per table computes all eight from ONE health evaluation (one log
replay, one listing of ``_delta_log`` for ``log_length``). A failing check is WARN or ERROR as
``delta_core`` says; its metadata holds the figures (numbers, for plots), their thresholds, a
table of them with units, the recommended operation and the operations that fix the check.

When checks run:

- on every new version the table's log sensor sees (and on its first tick): it requests the
  ``<table>_checks`` job (``jobs``), one run per version (run key);
- after every maintenance run: the table's maintenance, per-operation and cross-table jobs
  select these checks too, and each check spec lists the table's maintenance assets as
  ``additional_deps``, so the checks' step runs after the maintenance steps of the same run and
  judges the table they left. Chosen over a run-status sensor that would start a second run:
  the verdict lands in the maintenance run itself, with no sensor interval in between, and a
  maintenance step that fails skips the checks (the next new version re-checks).
"""

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    MetadataValue,
    multi_asset_check,
)

from assets.health_view import health_cache, health_columns, health_policy
from assets.table import table_asset_key
from delta_core.health.check_names import CHECK_REMEDIES, PROTOCOL_SUPPORTED
from delta_core.health.checks import (
    REPORT_CHECKS,
    CheckStatus,
    Figure,
    HealthCheck,
    check_protocol_supported,
    evaluate_checks,
)
from resources import resource_key_of, table_resource
from resources.config import TableConfig

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

SEVERITY = {CheckStatus.WARN: AssetCheckSeverity.WARN, CheckStatus.ERROR: AssetCheckSeverity.ERROR}


def health_check_keys(table_name: str) -> tuple[AssetCheckKey, ...]:
    """The keys of the table's eight health checks (on its table asset)."""
    key = table_asset_key(table_name)
    return tuple(AssetCheckKey(key, name) for name in CHECK_REMEDIES)


def checks_op_name(table_name: str) -> str:
    return f"{table_name}_health_checks"


def spec_description(name: str) -> str:
    """The check's own docstring, as one line (the function that judges it says what it judges)."""
    judge = check_protocol_supported if name == PROTOCOL_SUPPORTED else REPORT_CHECKS[name]
    return " ".join((judge.__doc__ or name).split())


def _number(figure: Figure) -> MetadataValue:
    return MetadataValue.float(float(figure.value)) if figure.unit == "ratio" or isinstance(figure.value, float) \
        else MetadataValue.int(int(figure.value))


def check_metadata(check: HealthCheck, *, version: int) -> dict[str, MetadataValue]:
    """What the check's row in the UI shows: the description and recommended operation first,
    the figures with units as a table, then each number (plotted over evaluations)."""
    rows = [("figure", f) for f in check.figures] + [("threshold", f) for f in check.thresholds]
    table = "\n".join(["| | name | value |", "|---|---|---:|"]
                      + [f"| {kind} | {f.name} | {f.display()} |" for kind, f in rows])
    meta: dict[str, MetadataValue] = {
        "description": MetadataValue.text(check.description),
        "recommended_operation": MetadataValue.text(check.operation or "none"),
        "remedies": MetadataValue.text(", ".join(CHECK_REMEDIES[check.name]) or "none: maintenance is blocked"),
        "delta_version": MetadataValue.int(version),
    }
    if check.skipped_reason is not None:
        meta["skipped_reason"] = MetadataValue.text(check.skipped_reason)
    if not check.reachable:
        meta["reachable"] = MetadataValue.bool(False)
        meta["unreachable_reason"] = MetadataValue.text(check.unreachable_reason or "")
    if rows:
        meta["figures"] = MetadataValue.md(table)
    meta.update({f.name: _number(f) for _, f in rows})
    return meta


def check_result(check: HealthCheck, *, asset_key: AssetKey, version: int) -> AssetCheckResult:
    return AssetCheckResult(
        asset_key=asset_key, check_name=check.name, passed=check.passed,
        severity=SEVERITY.get(check.status, AssetCheckSeverity.WARN),
        description=check.description, metadata=check_metadata(check, version=version))


def build_table_checks(table: TableConfig, maintenance_keys: Sequence[AssetKey]) -> AssetChecksDefinition:
    """The table's eight health checks, as one op after its ``maintenance_keys`` (see the module
    docstring); a subset may be selected (each then costs the same one evaluation)."""
    key = table_asset_key(table.name)
    resource_key = resource_key_of(table)
    specs = [AssetCheckSpec(name, asset=key, description=spec_description(name), additional_deps=maintenance_keys)
             for name in CHECK_REMEDIES]

    @multi_asset_check(name=checks_op_name(table.name), specs=specs, can_subset=True,
                       required_resource_keys={resource_key},
                       description=f"Health checks of `{table.name}` from its Delta log.")
    def _checks(context: AssetCheckExecutionContext) -> Iterator[AssetCheckResult]:
        yield from check_results(context, table, table_resource(context.resources, table).open(), key)

    return _checks


def check_results(context: AssetCheckExecutionContext, table: TableConfig, dt: "DeltaTable",
                  key: AssetKey) -> Iterator[AssetCheckResult]:
    """The results of the checks on ``key`` that ``context`` selects, from one evaluation of ``table``."""
    result = evaluate_checks(dt, policy=health_policy(table), columns=health_columns(table),
                             cache=health_cache(context.instance))
    selected = context.selected_asset_check_keys
    context.log.info(f"{table.name} at version {result.version}: " + ", ".join(
        f"{c.name} {c.status.value}" for c in result.checks))
    for check in result.checks:
        if AssetCheckKey(key, check.name) in selected:
            yield check_result(check, asset_key=key, version=result.version)
