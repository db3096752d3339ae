"""The ``delta-core`` command line (entry point ``delta_core.cli.main:main``): shared plumbing in
``common``, commands in ``read``, ``write`` and ``maintenance``."""
