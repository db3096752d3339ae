"""Writing to a table: optimistic transactions and Delta's conflict rules, commitInfo, data files
with statistics, checkpoints, log cleanup, and the writer duties of table features (constraints,
feature enablement, void columns, checkpoint protection). ``table_writes`` holds the table-level
operations (create, append, overwrite, delete, set properties, rewrite). Imports ``model``,
``storage`` and ``log``."""
