"""The soak's closing figures that come from the table itself: its rows as two engines read
them against the writers' ledgers, and, from the log as written, what maintenance committed,
how far behind it committed, and which of the data files it wrote a commit took (their causes
and operations: ``soak_waste``).

Rows are read by delta-rs (``QueryBuilder``: its SQL engine, deletion vectors applied) and by
delta-kernel-rs (``polars_deltalake.read_delta``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.soak_files import CommitFiles, Seen
from benchmarks.soak_waste import WrittenFile
from delta_core.model.delta_operations import OPTIMIZE, REORG


@dataclass(frozen=True, slots=True)
class RowCheck:
    """One engine's rows against the ledgers."""

    engine: str
    rows: int
    lost: int  # ids the ledgers keep and the engine does not read
    duplicated: int  # extra copies of an id
    unexpected: int  # ids the ledgers do not keep (deleted, or never written)
    changed: int  # ids read with other values than the ledgers say

    @property
    def equal(self) -> bool:
        return self.lost == self.duplicated == self.unexpected == self.changed == 0


def read_delta_rs(uri: str) -> pa.Table:
    import deltalake

    dt = deltalake.DeltaTable(uri)
    return pa.table(deltalake.QueryBuilder().register("t", dt).execute("select * from t").read_all())


def read_kernel(uri: str) -> pa.Table:
    import polars_deltalake

    return polars_deltalake.read_delta(uri).to_arrow()


def check_rows(engine: str, actual: pa.Table, expected: pa.Table) -> RowCheck:
    actual = actual.select(expected.column_names).cast(expected.schema)
    ids, counts = np.unique(actual.column("id").to_numpy(), return_counts=True)
    want = expected.column("id").to_numpy()
    joined = expected.join(actual, keys="id", join_type="inner", right_suffix="_read")
    differs = pa.array(np.zeros(joined.num_rows, dtype=bool))
    for name in expected.column_names:
        if name != "id":
            differs = pc.or_(differs, pc.not_equal(joined.column(name), joined.column(f"{name}_read")))
    return RowCheck(engine=engine, rows=actual.num_rows, lost=len(np.setdiff1d(want, ids)),
                    duplicated=int((counts - 1).sum()), unexpected=len(np.setdiff1d(ids, want)),
                    changed=int(pc.sum(differs).as_py() or 0))


@dataclass(frozen=True, slots=True)
class LogFigures:
    """What the log says maintenance (commits by ``engine_prefix``) did."""

    maintenance_commits: Counter[str]  # by commitInfo.operation
    writer_commits: int
    rewritten_bytes: int  # data files added by maintenance commits
    worst_behind: int  # commits between the version a maintenance commit read and its own
    worst_behind_operation: str
    longest_unrewritten: int  # most commits in a row with no maintenance rewrite (OPTIMIZE, REORG)
    maintenance_files: tuple[WrittenFile, ...]  # every data file maintenance wrote, committed or not
    writer_orphan_bytes: int  # files the writers wrote that no commit references (their refused commits)
    unattributed_bytes: int  # unreferenced files of an unknown writer


def _suffix(key: str) -> str:
    """The part of a data file name after its UUID (``c000.snappy.parquet``): its codec."""
    return key.rsplit("-", 1)[-1]


def log_figures(commits: list[CommitFiles], seen: dict[str, Seen], *, engine_prefix: str) -> LogFigures:
    """``seen``: every data file written during the soak. A file is the writers' if its name
    ends as only theirs do (the soak's writers write ZSTD), else maintenance's; a file no commit
    references whose name ends as both's do is unattributed."""
    ours = [c for c in commits if c.engine.startswith(engine_prefix)]
    our_versions = {c.version for c in ours}
    behind = [(c.version - 1 - c.read_version, c.operation) for c in ours if c.read_version is not None]
    worst = max(behind, default=(0, ""))
    rewrites = [c.version for c in ours if c.operation in (OPTIMIZE, REORG)]
    marks = [0, *rewrites, commits[-1].version if commits else 0]
    writer_suffixes = {_suffix(k) for c in commits if c.version not in our_versions for k in c.adds}
    our_suffixes = {_suffix(k) for c in ours for k in c.adds}
    referenced = {k for c in commits for k in c.adds}
    orphan_bytes: Counter[str] = Counter()
    ours_written = []
    for key, file in seen.items():
        suffix = _suffix(key)
        if suffix not in writer_suffixes:
            ours_written.append(WrittenFile(key, file.size, file.at, committed=key in referenced))
        elif key not in referenced:
            orphan_bytes["unknown" if suffix in our_suffixes else "writers"] += file.size
    return LogFigures(
        maintenance_commits=Counter(c.operation for c in ours),
        writer_commits=len(commits) - len(ours),
        rewritten_bytes=sum(sum(c.adds.values()) for c in ours),
        worst_behind=worst[0], worst_behind_operation=worst[1],
        longest_unrewritten=max(b - a for a, b in zip(marks, marks[1:])),
        maintenance_files=tuple(ours_written),
        writer_orphan_bytes=orphan_bytes["writers"], unattributed_bytes=orphan_bytes["unknown"])
