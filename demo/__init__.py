"""The demo: build a realistic small-file Delta table, run the full maintenance job on it
through Dagster, and print what changed. ``python -m demo --help``; ``scripts/demo.sh``."""
