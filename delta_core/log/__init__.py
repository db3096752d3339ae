"""Reading the log (PROTOCOL.md "Delta Log Entries", "Checkpoints", "Action Reconciliation"):
log file names, commit and checkpoint readers, the log segment, columnar replay, snapshots,
history and ``DeltaTable``. Imports ``model`` and ``storage``."""
