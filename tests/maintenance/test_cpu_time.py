"""``cpu_seconds`` counts the CPU of the processes a run started while they still run (a local
Spark's JVM and its Python workers are such processes), and after they are reaped."""

from __future__ import annotations

import subprocess
import sys

import pytest

from delta_core.maintenance.cpu_time import cpu_seconds

BURN = 0.6  # CPU seconds the grandchild spends before it waits
# A child that starts a grandchild (a JVM starting Python workers) and waits for it: the grandchild
# burns BURN seconds of CPU, says so, then waits for its input to close.
GRANDCHILD = (f"import sys, time\nt = time.process_time()\nwhile time.process_time() - t < {BURN}: pass\n"
              "print('burnt', flush=True)\nsys.stdin.read()\n")
CHILD = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {GRANDCHILD!r}], check=True)\n"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="descendants are read from /proc")
def test_a_live_grandchild_counts_and_so_does_it_once_reaped():
    before = cpu_seconds()
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "burnt"
        while_alive = cpu_seconds() - before
    finally:
        child.communicate("")  # the grandchild's input (inherited) closes: both end, the child reaped
    after = cpu_seconds() - before
    assert while_alive >= BURN * 0.9
    assert after >= while_alive * 0.99
