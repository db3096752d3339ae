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


def test_tables_yaml_sections_are_the_registry_names():
    from delta_core.config.records import OperationPolicy, TableConfig
    from delta_core.config.sections import POLICY_KEYS

    table = TableConfig(name="t", uri="/t")
    for op in REGISTRY:
        if op.configured_in is None:
            assert op.name in POLICY_KEYS
            # without a section: the entry's defaults, its own option type
            assert table.policy(op.name) == table.policies[op.name] == OperationPolicy.default(op)
            assert table.options(op.options_type) == op.options_type()
            assert table.enabled(op.name) == op.on_by_default
        else:
            assert op.name not in POLICY_KEYS and table.policy(op.name) is None
        assert not hasattr(table, op.name)  # typed access only: policies[name], options(OptionsType)


def test_zorder_curve_choices_are_the_curves_implemented():
    import jsonschema

    from delta_core.config.sections import OPERATION_SECTIONS
    from delta_core.maintenance.curves import CURVES

    schema = OPERATION_SECTIONS["zorder"].keys["curve"].value.schema()
    assert tuple(schema["enum"]) == CURVES
    jsonschema.validate(CURVES[-1], schema)
