"""The one tables.yaml reader, shared by the ``delta-core`` command line and the Dagster code location.

``reader`` turns the file into the frozen records of ``records``; ``sections`` describes the
file (operation sections from the registry's option fields), from which ``schema`` generates
``tables.schema.json``; ``table_checks`` checks the policies against each table's schema;
``generated_names`` holds the names the code location generates, so clashes are refused at load.
"""
