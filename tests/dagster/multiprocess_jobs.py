"""Jobs for the multiprocess executor, which rebuilds the job in every step process: so each is a
module-level function (``dagster.reconstructable``) loading the code location from
``$DELTA_MAINTENANCE_TABLES`` exactly as ``definitions.py`` does."""

from __future__ import annotations

from typing import Any

from jobs import ALL_TABLES_MAINTENANCE_JOB, all_tables_job_name


def _job(name: str) -> Any:
    from definitions import build_definitions
    from resources.config import load_config

    return build_definitions(load_config()).resolve_job_def(name)


def all_tables_compact() -> Any:
    return _job(all_tables_job_name("compact"))


def all_tables_maintenance() -> Any:
    return _job(ALL_TABLES_MAINTENANCE_JOB)
