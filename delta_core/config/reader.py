"""The one tables.yaml reader: the file -> ``MaintenanceConfig``, or ``TableConfigError``.

The ``delta-core`` command line (``--config FILE --table NAME``, ``health --config``) and the
Dagster code location (``definitions.py``) both read the file here, so they accept and refuse the
same files with the same one-line message naming the file, the table and the field. The file's
shape is ``delta_core.config.sections`` (the operation sections generated from the registry's
option fields); then each enabled section must give its required fields, the tables found under
``discover:`` roots are added (``delta_core.log.discovery``), and no table may take a name the
code location generates for another (``delta_core.config.generated_names``). What needs a
table's schema is checked by ``delta_core.config.table_checks``.
"""

from __future__ import annotations

import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

from delta_core.config.generated_names import collision
from delta_core.config.records import (
    AdvisorPolicy,
    DailySummary,
    DiscoverRoot,
    DownstreamPolicy,
    EnvRef,
    FleetPolicy,
    HistoryConfig,
    MaintenanceConfig,
    OperationPolicy,
    SensorPolicy,
    SparkSettings,
    TableConfig,
    TableConfigError,
    nested_options,
)
from delta_core.config.sections import TABLES_FILE
from delta_core.config.shape import Invalid, Keys
from delta_core.config.table_checks import short_retention_error
from delta_core.errors import ConfigError
from delta_core.health.policy import ADVISOR_THRESHOLDS, table_health_policy
from delta_core.maintenance.operations import CHECKPOINT, COMPACT, PURGE, REGISTRY, ZORDER
from delta_core.maintenance.option_fields import policy_fields
from delta_core.maintenance.options import DEFAULT_MIN_INPUT_FILES
from delta_core.maintenance.policy_values import resolve_env, resolve_table_uri
from delta_core.model.table_properties import TableProperties

CONFIG_ENV_VAR = "DELTA_MAINTENANCE_TABLES"  # the file, when no path is given (the code location, --table)


def load_config(path: pathlib.Path) -> MaintenanceConfig:
    """Read and check the file at ``path`` (relative URIs in it are relative to its folder)."""
    import yaml  # deferred: the command line needs it only with --config

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TableConfigError(f"cannot read the table config file ({exc.strerror}); give its path with --config "
                               f"or ${CONFIG_ENV_VAR}", path=str(path)) from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TableConfigError(f"is not valid YAML: {exc}", path=str(path)) from None
    return parse_config(raw, source=str(path), base_dir=path.parent)


def parse_config(raw: Any, *, source: str | None = None, base_dir: pathlib.Path | None = None) -> MaintenanceConfig:
    """A loaded YAML document -> ``MaintenanceConfig``; ``TableConfigError`` naming where it fails."""
    if raw is None:
        raise TableConfigError("the file is empty; it needs a 'tables' mapping or a 'discover' list",
                               path=source, field="tables")
    try:
        doc = TABLES_FILE.read(raw, ())
        explicit = [_table(name, policy, ("tables", name), uri=_uri(policy["uri"], base_dir))
                    for name, policy in doc["tables"].items()]
    except Invalid as exc:
        raise _error(exc.keys, exc.message, source) from None
    fleet = FleetPolicy(**doc["fleet"])
    try:
        roots = _roots(doc, base_dir=base_dir)
        if fleet.partitioned:
            _refuse_downstream(roots)
        discovered = discovered_tables(roots, explicit)
    except Invalid as exc:
        raise _error(exc.keys, exc.message, source) from None
    except ConfigError as exc:  # from discovery: a bad root, two tables of one name
        raise TableConfigError(str(exc), path=source, field="discover") from None
    tables = (*explicit, *discovered)
    clash = collision(((t.name, t.discovered_under is not None) for t in tables), partitioned=fleet.partitioned)
    if clash is not None:
        raise TableConfigError(clash[1], path=source, table=clash[0], field="name")
    spark = doc["spark"]
    return MaintenanceConfig(
        tables=tables, source=source,
        spark=SparkSettings(master=spark["master"], app_name=spark["app_name"], conf=tuple(spark["conf"].items()),
                            pool=spark["pool"]),
        fleet=fleet, history=_history(doc["history"], base_dir), discover=roots)


def _history(section: Mapping[str, Any] | None, base_dir: pathlib.Path | None) -> HistoryConfig | None:
    if section is None:
        return None
    return HistoryConfig(uri=_uri(section["uri"], base_dir), storage_options=section["storage_options"])


def _error(keys: Keys, message: str, source: str | None) -> TableConfigError:
    if keys[:1] == ("tables",) and len(keys) > 1:
        return TableConfigError(message, path=source, table=keys[1], field=".".join(keys[2:]) or "name")
    return TableConfigError(message, path=source, field=".".join(keys) or None)


def _uri(uri: str | EnvRef, base_dir: pathlib.Path | None) -> str | EnvRef:
    return uri if isinstance(uri, EnvRef) else resolve_table_uri(uri, base_dir)


def _table(name: str, policy: Mapping[str, Any], keys: Keys, *, uri: str | EnvRef) -> TableConfig:
    """The record of one table's policy as read (``sections.POLICY_KEYS``)."""
    policies = {}
    for op in REGISTRY:
        if op.configured_in is not None:
            continue
        section = policy[op.name]
        if section is None:  # no section: the entry's defaults
            policies[op.name] = OperationPolicy.default(op)
            continue
        fields = policy_fields(op.options_type)
        options = op.options_type(**{f.name: section[f.policy_key] for f in fields if section[f.policy_key] is not None})
        for f in fields:
            if f.spec.required and section["enabled"] and not getattr(options, f.name):
                raise Invalid((*keys, op.name, f.policy_key), f"{op.name} is enabled but names no {f.policy_key}")
        policies[op.name] = OperationPolicy(enabled=section["enabled"], options=options,
                                            cron=section.get("cron", op.default_cron),
                                            **({"interval": section["interval"]} if section.get("interval") else {}))
    _short_retention(policies, keys)
    sensor, downstream, advisor = policy["sensor"], policy["downstream"], policy["advisor"]
    compact = policies[COMPACT.name].options
    summary = downstream["daily_summary"]
    return TableConfig(
        name=name, uri=uri, storage_options=policy["storage_options"], description=policy["description"],
        policies=policies,
        sensor=SensorPolicy(**sensor),
        downstream=DownstreamPolicy(daily_summary=DailySummary(summary["date_column"]) if summary else None,
                                    assets=downstream["assets"]),
        # An interval written in tables.yaml wins; else the advisor follows delta.checkpointInterval.
        advisor=_advisor(advisor, target_size=compact.target_size, min_file_size=compact.min_file_size,
                         checkpoint_interval=(policy[CHECKPOINT.name] or {}).get("interval"),
                         zorder_target_size=policies[ZORDER.name].options.target_size,
                         min_input_files=compact.min_input_files or DEFAULT_MIN_INPUT_FILES,
                         purge_max_deleted_rows_ratio=policies[PURGE.name].options.max_deleted_rows_ratio),
    )


def _short_retention(policies: Mapping[str, OperationPolicy], keys: Keys) -> None:
    """A retention below the protocol's default needs its opt-in already in the file (the table's
    own property is checked against it by ``table_checks``)."""
    for name, policy in policies.items():
        error = short_retention_error(policy.options, TableProperties({}), whose="the default")
        if error is not None:
            raise Invalid((*keys, name, error[0]), error[1])


def _advisor(section: Mapping[str, Any], *, target_size: int | None, min_file_size: int | None,
             checkpoint_interval: int | None, zorder_target_size: int | None, min_input_files: int,
             purge_max_deleted_rows_ratio: float | None) -> AdvisorPolicy:
    health = table_health_policy({k: section[k] for k in ADVISOR_THRESHOLDS}, target_size=target_size,
                                 min_file_size=min_file_size, checkpoint_interval=checkpoint_interval,
                                 zorder_target_size=zorder_target_size, min_input_files=min_input_files,
                                 purge_max_deleted_rows_ratio=purge_max_deleted_rows_ratio)
    return AdvisorPolicy(mode=section["mode"], interval_seconds=section["interval_seconds"],
                         cooldown_minutes=section["cooldown_minutes"],
                         vacuum_min_interval_hours=section["vacuum_min_interval_hours"], health=health,
                         windows=section["windows"])


def _roots(doc: Mapping[str, Any], *, base_dir: pathlib.Path | None) -> tuple[DiscoverRoot, ...]:
    """The ``discover`` entries: each rule with the record its tables take (one record per rule,
    renamed per table: 2,000 tables must not read 2,000 policies). Reads ``{env: NAME}`` now."""
    from delta_core.log.discovery import DiscoverRule  # storage (fsspec) only when discovering

    roots = []
    for i, rule in enumerate(doc["discover"]):
        keys = ("discover", str(i), "defaults")
        defaults = rule["defaults"]
        env = {k: {"env": v.name} if isinstance(v, EnvRef) else v for k, v in defaults["storage_options"]}
        roots.append(DiscoverRoot(
            rule=DiscoverRule(root=resolve_table_uri(rule["root"], base_dir), include=rule["include"],
                              exclude=rule["exclude"],
                              storage_options=nested_options(resolve_env(env, ".".join(keys) + ".storage_options"))
                              or None),
            template=_table("discovered", defaults, keys, uri="")))
    return tuple(roots)


def _refuse_downstream(roots: Sequence[DiscoverRoot]) -> None:
    """Discovered tables as partitions have no downstream assets: a root's ``defaults`` naming
    some is refused, not ignored."""
    for i, root in enumerate(roots):
        if root.template.downstream.daily_summary is not None or root.template.downstream.assets:
            raise Invalid(("discover", str(i), "defaults", "downstream"),
                          "discovered tables as partitions (fleet.discovered_as: partitions) have no downstream "
                          "assets; list the table under tables: to give it some, or drop downstream here")


def discovered_tables(roots: Sequence[DiscoverRoot], explicit: Sequence[TableConfig]) -> list[TableConfig]:
    """The records of the tables the ``discover`` roots find now, each with its root's ``defaults``;
    an explicit table of the same name or location wins."""
    from delta_core.log.discovery import discover_all

    explicit_uris = {t.name: t.uri if isinstance(t.uri, str) else None for t in explicit}
    return [roots[i].table(found.name, found.uri) for i, found in discover_all([r.rule for r in roots], explicit_uris)]
