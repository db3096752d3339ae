"""Table health from the log alone: metrics, a 0–100 score from named parts, and
recommendations of the maintenance operations that would pay off.

``table_health(table, ...)`` (``delta_core.health.report``) is the entry point; the modules
below it are pure over a snapshot: ``metrics`` (what the log says), ``overlap`` (clustering
quality from min/max stats), ``score`` and ``advice`` (both driven by a ``HealthPolicy``).
``cache`` keeps a version's figures between evaluations, in files any process can read.
"""
