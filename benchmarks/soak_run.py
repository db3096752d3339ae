"""One maintenance run of the soak, in its own process (so the soak can SIGKILL its group):

    python -m benchmarks.soak_run TABLES_YAML TABLE RUN_ID WORK_DIR

Run from the repository root (the Dagster code location imports from there), with
``DAGSTER_HOME`` set. The run is the table's maintenance job (``<table>_maintenance`` of the
code location's ``build_definitions``) on the instance in ``DAGSTER_HOME``, run id ``RUN_ID``,
with the operations its policy asks for now: those the table's health recommends under its
tables.yaml thresholds (as the advisor sensor decides: compact, zorder, purge, vacuum), and
checkpoint and compact-log, whose assets decide themselves (interval, ``min_commits``).

Writes ``RUN_ID.started`` when the run begins (the soak times its kills from there) and
``RUN_ID.json`` at the end: the operations run, each step's outcome and metrics (a rewrite's
record: ``batches_committed``, ``batches_retried``, ``batches_aborted`` and their
``abandoned_reasons``, what was left or skipped as busy), and each failed step's error classes.
"""

from __future__ import annotations

import json
import logging
import pathlib
import sys
import time
from typing import Any

# Operations the health report may recommend; the others run on every run and decide for themselves.
ADVISED = ("compact", "zorder", "cluster", "purge", "vacuum")
QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


_LISTS = ("versions", "abandoned_reasons")  # the metrics' sequences the soak reports


def _scalars(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items()
            if isinstance(v, (int, float, str, bool)) or v is None or k in _LISTS}


def _step_metrics(result: Any, node: str) -> dict[str, Any]:
    """The step's metrics record (rewrites, vacuum) or its scalar metadata (checkpoint, compact-log)."""
    out: dict[str, Any] = {}
    for mat in result.asset_materializations_for_node(node):
        metadata = {k: v.value for k, v in mat.metadata.items()}
        metrics = metadata.get("metrics")
        if isinstance(metrics, dict):
            out.update(_scalars(metrics))
        else:
            out.update(_scalars({k: v for k, v in metadata.items()
                                 if not k.startswith("health_") and k != "summary"}))
    return out


def _error_chain(error: Any) -> list[Any]:
    """The step's error and its causes, outermost first (Dagster wraps the asset's exception)."""
    chain = []
    while error is not None:
        chain.append(error)
        error = error.cause
    return chain


def _is_clean_conflict(classes: list[str]) -> bool:
    """A typed conflict or abort from delta_core (the run lost to a concurrent writer)."""
    from delta_core import errors

    clean = (errors.CommitConflictError, errors.CommitRetriesExhaustedError)
    return any(isinstance(c, type) and issubclass(c, clean) for c in (getattr(errors, n, None) for n in classes))


def main(argv: list[str]) -> int:
    config_path, table_name, run_id, work = argv
    out = pathlib.Path(work)
    core_log = logging.getLogger("delta_core")
    core_log.setLevel(logging.INFO)
    to_stderr = logging.StreamHandler(sys.stderr)  # the run's log file: batches, conflicts, aborts
    to_stderr.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    core_log.addHandler(to_stderr)

    from dagster import DagsterInstance

    from assets.health_view import table_health_report
    from assets.maintenance import maintenance_asset_key
    from definitions import build_definitions
    from jobs import maintenance_job_name
    from resources import DeltaTableResource
    from resources.config import load_config

    config = load_config(config_path)
    table = config.table(table_name)
    defs = build_definitions(config)
    report = table_health_report(DeltaTableResource.from_table_config(table).open(), table)
    advised = {r.operation for r in report.recommendations}
    operations = [op for op in table.operations if op not in ADVISED or op in advised]
    job = defs.resolve_job_def(maintenance_job_name(table_name))
    (out / f"{run_id}.started").touch()
    started = time.monotonic()
    result = job.execute_in_process(
        instance=DagsterInstance.get(), run_id=run_id, raise_on_error=False, run_config=QUIET_RUN_CONFIG,
        asset_selection=[maintenance_asset_key(table_name, op) for op in operations])
    seconds = time.monotonic() - started
    steps: dict[str, Any] = {}
    for op in operations:
        node = defs.resolve_assets_def(maintenance_asset_key(table_name, op)).node_def.name
        status = "success" if result.is_node_success(node) else "failed" if result.is_node_failed(node) else "skipped"
        steps[op] = {"status": status, "metrics": _step_metrics(result, node)}
    failures = []
    for event in result.get_step_failure_events():
        chain = _error_chain(event.step_failure_data.error)
        classes = [e.cls_name for e in chain]
        failures.append({"step": event.step_key, "classes": classes, "clean_conflict": _is_clean_conflict(classes),
                         "message": chain[-1].message.strip()[:2000] if chain else ""})
    summary = {"run_id": run_id, "success": result.success, "seconds": seconds, "operations": operations,
               "steps": steps, "failures": failures,
               "health_version": report.version}
    (out / f"{run_id}.json").write_text(json.dumps(summary, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
