"""Size limits of the checkpoints this library writes (PROTOCOL.md "V2 Spec", "Sidecar Files").

A module of constants only, so the command line can print the defaults without importing
pyarrow, and ``maintenance.options`` can name them without the write code.
"""

from __future__ import annotations

# v2Checkpoint tables with more file actions than this get a UUID-named checkpoint whose file
# actions are in sidecars of at most this many actions each.
DEFAULT_SIDECAR_THRESHOLD = 100_000
