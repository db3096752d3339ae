"""The ``commitInfo.operation`` strings our commits write.

PROTOCOL.md "Commit Provenance Information" leaves ``commitInfo`` free-form; these are the
names Delta Spark writes for the same operations, so other engines' history views
(``DESCRIBE HISTORY``, delta-rs ``history()``) show our commits the way they show their own.
Kept in ``model`` (the bottom layer) so the writer's defaults and the operation registry
(``delta_core.maintenance.operations``) read one spelling.
"""

from __future__ import annotations

OPTIMIZE = "OPTIMIZE"  # compaction and Z-order: one dataChange=false rewrite commit per batch
VACUUM_START = "VACUUM START"  # before vacuum deletes anything
VACUUM_END = "VACUUM END"  # after it deleted
CREATE_TABLE = "CREATE TABLE"  # the first commit of a table we create
WRITE = "WRITE"  # append and overwrite
DELETE = "DELETE"  # whole files removed with dataChange=true
SET_TBLPROPERTIES = "SET TBLPROPERTIES"  # metadata (and protocol) changes from table properties
CLUSTER_BY = "CLUSTER BY"  # ALTER TABLE ... CLUSTER BY: the delta.clustering domain (and protocol)
REORG = "REORG"  # purge (REORG TABLE ... APPLY (PURGE)): rewrites files with DVs or dropped columns
RESTORE = "RESTORE"  # RESTORE TABLE ... TO VERSION/TIMESTAMP AS OF: one dataChange=true commit
COMPUTE_STATS = "COMPUTE STATS"  # ANALYZE TABLE ... COMPUTE DELTA STATISTICS: the same files re-added with new stats
