#!/usr/bin/env bash
# Set up (scripts/setup.sh), lint (ruff) and type-check (mypy, config in pyproject.toml), then run
# the whole test suite. Extra arguments go to pytest.
# --fast (first argument): the contributors' tier, only the tests that start neither Spark nor
# servers nor a browser (-m "not slow and not spark"), and no browser installed.
set -euo pipefail
cd "$(dirname "$0")/.."
select=()
if [ "${1:-}" = "--fast" ]; then
  shift
  select=(-m "not slow and not spark")
fi
bash scripts/setup.sh
# Headless Chromium + chromedriver for the UI browser test only (Debian packages; CI runs as
# root); the demo (scripts/demo.sh) never installs a browser.
if [ ${#select[@]} -eq 0 ] && [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update && apt-get install -y chromium chromium-driver
fi
.venv/bin/ruff check .
.venv/bin/mypy
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
export SPARK_LOCAL_IP=127.0.0.1 AWS_DEFAULT_REGION=us-east-1
exec .venv/bin/python -m pytest -q ${select[@]+"${select[@]}"} "$@"
