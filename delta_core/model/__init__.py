"""The protocol's data model, pure and without IO: actions (PROTOCOL.md "Actions"), schema and
column mapping, partition values, statistics, table features and table properties, and the one
canonical form of a logged path. Imports nothing else of delta_core but ``errors``."""
