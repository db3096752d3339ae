"""CHECK constraints: what this library does with ``delta.constraints.*`` table properties
(PROTOCOL.md "CHECK Constraints").

The protocol asks writers to evaluate every constraint (a Spark SQL expression) on every new
row, and to validate the existing rows when a constraint is added. This library evaluates no
SQL, so it keeps both rules by refusing instead:

- a commit that adds rows (``add`` with ``dataChange=true``) to a table holding any constraint
  is refused, as is a whole-file delete through ``write`` (treated like the invariants gate in
  ``table_features``, which refuses every data-changing write); rewrites with
  ``dataChange=false`` copy rows unchanged and stay allowed;
- adding or changing a constraint is allowed only while the table has no live file (no row to
  validate); otherwise it is refused and Delta Spark's ``ALTER TABLE ... ADD CONSTRAINT``,
  which validates the rows, is the way.

The check looks at the property itself, not at the protocol: a table whose protocol does not
support ``checkConstraints`` yet carries a constraint (another writer broke the rule) is still
guarded.
"""

from __future__ import annotations

from collections.abc import Mapping

from delta_core.errors import ConfigError, UnsupportedWriterFeatureError

CONSTRAINT_PREFIX = "delta.constraints."


def constraints(configuration: Mapping[str, str]) -> dict[str, str]:
    """Constraint name -> SQL expression, from ``delta.constraints.{name}`` properties."""
    return {k[len(CONSTRAINT_PREFIX):]: v for k, v in configuration.items() if k.startswith(CONSTRAINT_PREFIX)}


def check_new_rows_allowed(configuration: Mapping[str, str], *, path: str | None = None,
                           version: int | None = None) -> None:
    """Refuse a write that changes rows while the table holds a CHECK constraint."""
    found = constraints(configuration)
    if not found:
        return
    name = sorted(found)[0]
    raise UnsupportedWriterFeatureError(
        f"table has CHECK constraint {name!r} ({found[name]}){' and others' if len(found) > 1 else ''}; "
        "this library cannot evaluate constraints, so it does not append, overwrite or delete rows "
        "here - write with Delta Spark, which enforces them (compaction and Z-order stay allowed)",
        path=path, version=version)


def check_constraints_added(old: Mapping[str, str], new: Mapping[str, str], *, live_files: int,
                            path: str | None = None, version: int | None = None) -> None:
    """Refuse adding or changing a constraint while there are rows it would have to validate."""
    added = sorted(k for k, v in new.items() if k.startswith(CONSTRAINT_PREFIX) and old.get(k) != v)
    if not added or live_files == 0:
        return
    raise ConfigError(
        f"adding {added[0]} needs every existing row checked against it, which this library cannot "
        f"do ({live_files} live file(s)); add the constraint with Delta Spark "
        "(ALTER TABLE ... ADD CONSTRAINT), which validates the rows", path=path, version=version)
