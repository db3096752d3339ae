"""Spark execution of maintenance plans: the session, the task runner, the one rewrite driver
(``driver``) with its two task executors (``bin_rewrite``, ``curve_rewrite``), the rewrite
operations that pair a plan with one of them (compaction, Z-order, clustering, purge), and
vacuum's listing and deletes on executors. The only place in delta_core that imports pyspark."""
