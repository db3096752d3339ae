"""What every benchmark sets up: its command line, a scratch directory (removed afterwards) and a warm
SparkSession."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def argument_parser(doc: str | None) -> argparse.ArgumentParser:
    """A benchmark's command line, its module docstring as the help text (kept as written)."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


@contextmanager
def scratch_dir(prefix: str, *, keep: bool = False) -> Iterator[str]:
    """A new directory named ``prefix...`` for the generated tables; removed on exit unless ``keep``."""
    work = tempfile.mkdtemp(prefix=prefix)
    try:
        yield work
    finally:
        if keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def warm_spark(master: str, app_name: str) -> Any:
    """A SparkSession on ``master`` whose Python workers have started (not part of any timing);
    prints how long that took."""
    from delta_core.maintenance.spark.session import build_spark_session
    from delta_core.maintenance.spark.tasks import warm_up

    t0 = time.perf_counter()
    spark = build_spark_session(master=master, app_name=app_name)
    warm_up(spark)
    print(f"spark session start (not in the timing): {time.perf_counter() - t0:.1f} s, master {master}", flush=True)
    return spark
