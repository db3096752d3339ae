"""The fleet: maintenance across all tables — the budget that bounds it (``budget``), what it
uses now (``usage``, read from the Dagster instance) and the report of every table (``report``)."""
