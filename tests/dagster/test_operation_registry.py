"""Every registry entry has its asset factory, and assets and jobs carry the registry's names."""

from __future__ import annotations

from dagster import AssetKey

from assets.maintenance import ASSET_FACTORIES, OPERATION_TAG
from definitions import build_definitions
from delta_core.maintenance.operations import CHECKPOINT, CLEANUP_LOG, OPERATIONS, REGISTRY
from jobs import all_tables_job_name, operation_job_name


def test_every_entry_has_an_asset_factory():
    for op in REGISTRY:
        if op.configured_in is not None:
            # configured inside another's section: cleanup_log is checkpoint.cleanup_log and
            # runs in the checkpoint asset
            assert op is CLEANUP_LOG and op.configured_in == CHECKPOINT.name
            assert CHECKPOINT.name in ASSET_FACTORIES
        else:
            assert op.name in ASSET_FACTORIES, f"registry entry {op.name!r} has no asset factory"
    assert set(ASSET_FACTORIES) == {op.name for op in REGISTRY if op.configured_in is None}


def test_assets_and_jobs_are_named_after_the_registry(tmp_path, tables_yaml):
    config = tables_yaml(f"""
tables:
  t:
    uri: {tmp_path / "t"}
    zorder: {{columns: [a]}}
    manifest: true
    cluster: {{columns: [a]}}
    compact_log: true
    purge: true
    analyze: true
""")
    defs = build_definitions(config)
    graph = defs.resolve_asset_graph()
    for op in OPERATIONS:
        if op.configured_in is not None:
            continue
        key = AssetKey(["t", op.name])
        assert graph.get(key).tags[OPERATION_TAG] == op.name
        assert defs.resolve_job_def(operation_job_name("t", op.name)).name == f"t_{op.name}"
        assert defs.resolve_job_def(all_tables_job_name(op.name)).name == f"all_tables_{op.name}"


def test_tables_yaml_sections_are_the_policy_keys():
    from resources.config_models import TableSection
    from resources.config_records import OperationPolicy, TableConfig

    table = TableConfig(name="t", uri="/t")
    for op in REGISTRY:
        if op.configured_in is None:
            assert op.name in TableSection.model_fields
            # without a section: the entry's defaults, its own option type, also as an attribute
            assert table.policy(op.name) == getattr(table, op.name) == OperationPolicy.default(op)
            assert isinstance(table.policy(op.name).options, op.options_type)
            assert table.policy(op.name).enabled == op.on_by_default


def test_zorder_curve_choices_are_the_curves_implemented():
    from typing import get_args

    from delta_core.maintenance.curves import CURVES
    from resources.config_models import SECTIONS

    assert get_args(SECTIONS["zorder"].model_fields["curve"].annotation) == CURVES
