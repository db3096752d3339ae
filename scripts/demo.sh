#!/usr/bin/env bash
# The README's main command: set up (scripts/setup.sh) and run the demo. Extra arguments go to
# `python -m demo` (e.g. --rows 5000 --appends 20). Then open the UI with the command it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-127.0.0.1}
export DAGSTER_HOME=${DAGSTER_HOME:-$PWD/.dagster_home}
exec .venv/bin/python -m demo "$@"
