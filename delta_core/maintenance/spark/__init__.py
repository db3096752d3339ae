"""Spark execution of maintenance plans: the session, the task runner, and the operations that
rewrite data or list storage on executors (compaction, Z-order, vacuum). The only place in
delta_core that imports pyspark."""
