"""CPU time of this process and of the processes it started: the maintenance history's
``core_seconds`` (``recorded_run``).

Counted, user plus system: this process and the children it has reaped (``getrusage``) and, on
Linux, every live descendant (``/proc/<pid>/stat``: its ``utime``, ``stime``, and the ``cutime``,
``cstime`` of the children it reaped), so a local Spark's JVM (started by the driver's Python) and
the Python workers its daemon forks count. A descendant that ends between two readings is counted
through the parent that reaps it. Not counted: executors elsewhere (a cluster, a Spark Connect
server) and processes left to be reaped by init. Elsewhere than Linux, only this process and its
reaped children.
"""

from __future__ import annotations

import os
import resource

_PROC = "/proc"
# /proc/<pid>/stat fields after "(comm) ": state, ppid, ... utime stime cutime cstime (fields 14-17)
_PPID, _TIMES = 1, slice(11, 15)


def cpu_seconds() -> float:
    """CPU seconds so far of this process, its reaped children and its live descendants."""
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime + _descendants_seconds(os.getpid())


def _descendants_seconds(root: int) -> float:
    """CPU seconds of the live descendants of ``root`` (and the children they reaped); 0 without /proc."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    try:
        entries = [e.name for e in os.scandir(_PROC) if e.name.isdigit()]
    except OSError:
        return 0.0
    for name in entries:
        try:
            with open(f"{_PROC}/{name}/stat", encoding="ascii", errors="replace") as fh:
                text = fh.read()
        except OSError:  # ended since the listing, or not ours to read
            continue
        fields = text[text.rfind(")") + 2:].split()
        pid = int(name)
        parents[pid] = int(fields[_PPID])
        ticks[pid] = sum(int(f) for f in fields[_TIMES])
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    total, stack = 0, list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        total += ticks[pid]
        stack.extend(children.get(pid, ()))
    return total / os.sysconf("SC_CLK_TCK")
