"""Maintenance operations: a pure ``plan_*`` and a Spark ``execute_*`` per operation."""
