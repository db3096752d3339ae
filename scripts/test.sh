#!/usr/bin/env bash
# Set up (scripts/setup.sh), lint (ruff) and type-check (mypy, config in pyproject.toml), then run
# the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
export SPARK_LOCAL_IP=127.0.0.1 AWS_DEFAULT_REGION=us-east-1
exec .venv/bin/python -m pytest -q "$@"
