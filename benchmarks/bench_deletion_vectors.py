"""Compaction of a table whose files carry deletion vectors vs the same compaction without them.

One table of about ``--gb`` GB in ``--files`` small files is written once through delta_core
(``bench_compaction.build``). A copy then gets one DELETE commit, as Delta Spark writes it
(PROTOCOL.md "Deletion Vectors"): every file is removed and added back with a ``u`` deletion
vector hiding ``--deleted`` (10%) of its rows, chosen at random; the vectors (pyroaring bitmaps)
sit in DV files of up to 100 vectors each. Each of ``--rounds`` rounds (after one untimed round)
copies both tables and compacts them with a warm Spark session, alternating which goes first. The headline is the ratio
of the medians with / without vectors (target: at most 1.2x). Every result is checked: the
compacted table without vectors holds every row, the one with vectors exactly the live rows.

    python -m benchmarks.bench_deletion_vectors [--gb 0.2] [--files 200] [--partitions 4]
        [--deleted 0.1] [--rounds 3] [--spark-master URL]
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Sequence

import numpy as np

from benchmarks.bench_compaction import TARGET_SIZE, _median, add_build_arguments, build
from benchmarks.harness import argument_parser, scratch_dir, warm_spark

VECTORS_PER_FILE = 100  # Delta Spark writes one DV file per task, holding many vectors


def add_deletion_vectors(uri: str, share: float, seed: int = 7) -> int:
    """Commit a DELETE that hides ``share`` of the rows of every file with a ``u`` vector;
    returns the number of rows deleted."""
    from delta_core.log.table import DeltaTable
    from delta_core.model.actions import Add, DeletionVectorDescriptor, Remove
    from delta_core.write.table_writes import set_properties
    from delta_core.write.transaction import Transaction
    from tests.dv_files import dv_data, dv_file_bytes, z85_encode

    table = DeltaTable(uri)
    set_properties(table, {"delta.enableDeletionVectors": "true"})
    rng = np.random.default_rng(seed)
    txn = Transaction(table, operation="DELETE", operation_parameters={"predicate": "[\"rand() < 0.1\"]"})
    adds = list(txn.snapshot.add_actions())
    deleted = 0
    actions: list[Add | Remove] = []
    now = int(time.time() * 1000)
    for start in range(0, len(adds), VECTORS_PER_FILE):
        group = adds[start:start + VECTORS_PER_FILE]
        datas, cards = [], []
        for a in group:
            n = json.loads(a.stats or "{}")["numRecords"]  # our writer always logs it
            rows = rng.choice(n, size=max(1, int(n * share)), replace=False)
            datas.append(dv_data(int(r) for r in rows))
            cards.append(len(rows))
        content, offsets = dv_file_bytes(datas)
        u = uuid.uuid4()
        with open(os.path.join(uri, f"deletion_vector_{u}.bin"), "wb") as fh:
            fh.write(content)
        for a, data, card, offset in zip(group, datas, cards, offsets):
            dv = DeletionVectorDescriptor("u", z85_encode(u.bytes), len(data), card, offset=offset)
            actions += [a.to_remove(now, data_change=True),
                        Add(a.path, a.partition_values, a.size, a.modification_time, True, a.stats, tags=a.tags,
                            deletion_vector=dv)]
            deleted += card
    with txn:
        txn.add_actions(actions)
        txn.commit()
    return deleted


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    add_build_arguments(parser, gb=0.2, files=200, rounds=3)
    parser.add_argument("--deleted", type=float, default=0.1, help="share of rows deleted per file (default 0.1)")
    args, _unknown = parser.parse_known_args(argv)

    import deltalake

    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.spark.compaction import compact

    with scratch_dir("bench_dv_") as work:
        t0 = time.perf_counter()
        rows, size = build(f"{work}/plain", args.gb, args.files, args.partitions)
        shutil.copytree(f"{work}/plain", f"{work}/with_dv")
        deleted = add_deletion_vectors(f"{work}/with_dv", args.deleted)
        n_files = DeltaTable(f"{work}/plain").snapshot().num_files
        print(f"table: {rows:,} rows, {size / 1e9:.2f} GB in {n_files} files, {args.partitions} partitions; "
              f"copy with vectors: {deleted:,} rows deleted ({deleted / rows:.1%}) "
              f"(built in {time.perf_counter() - t0:.0f} s); target {TARGET_SIZE >> 20} MiB")

        spark = warm_spark(args.spark_master, "bench-deletion-vectors")

        expected = {"plain": rows, "with_dv": rows - deleted}
        times: dict[str, list[float]] = {name: [] for name in expected}
        print(f"{'round':<7}{'table':<10}{'files in':>9}{'files out':>10}{'seconds':>9}")
        # Round 0 is not timed: the first compaction starts Spark's Python workers.
        for r in range(args.rounds + 1):
            order = list(expected) if r % 2 == 0 else list(reversed(expected))
            for name in order:
                uri = f"{work}/run_{name}"
                shutil.copytree(f"{work}/{name}", uri)
                t0 = time.perf_counter()
                metrics = compact(DeltaTable(uri), spark, target_size=TARGET_SIZE)
                seconds = time.perf_counter() - t0
                # counted by delta-rs's query engine, which applies any vector left
                count = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri)).execute(
                    "select count(*) as n from t").read_all().column("n")[0].as_py()
                assert count == expected[name], (name, count, expected[name])
                shutil.rmtree(uri)
                if r:
                    times[name].append(seconds)
                print(f"{r if r else 'warm':<7}{name:<10}{metrics.num_removed_files:>9}{metrics.num_added_files:>10}"
                      f"{seconds:>9.2f}", flush=True)
        with_dv, plain = _median(times["with_dv"]), _median(times["plain"])
        print(f"median seconds: with vectors {with_dv:.2f}, without {plain:.2f}; per-round ratios "
              + ", ".join(f"{a / b:.2f}" for a, b in zip(times["with_dv"], times["plain"])))
        print(f"ratio with / without deletion vectors (medians): {with_dv / plain:.2f}x (target <= 1.2x); "
              f"best rounds: {min(times['with_dv']) / min(times['plain']):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
