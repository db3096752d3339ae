"""``python -m delta_core``: the same command line as the ``delta-core`` script."""

from delta_core.cli.main import main

raise SystemExit(main())
