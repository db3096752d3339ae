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
# What the UI browser tests need, installed whenever any part is missing: headless Chromium and
# chromedriver (Debian packages, as root; CI runs as root) and selenium in the venv. The fast tier
# and the demo (scripts/demo.sh) never install a browser. The paths can be pointed elsewhere
# (CHROMIUM, CHROMEDRIVER) only to test this script.
chromium=${CHROMIUM:-/usr/bin/chromium} chromedriver=${CHROMEDRIVER:-/usr/bin/chromedriver}
if [ ${#select[@]} -eq 0 ]; then
  if { [ ! -x "$chromium" ] || [ ! -x "$chromedriver" ]; } && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update && apt-get install -y chromium chromium-driver
  fi
  if ! .venv/bin/python -c "import selenium" 2>/dev/null; then
    .venv/bin/pip install -q "selenium>=4"
  fi
fi
.venv/bin/ruff check .
.venv/bin/mypy
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
export SPARK_LOCAL_IP=127.0.0.1 AWS_DEFAULT_REGION=us-east-1
exec .venv/bin/python -m pytest -q ${select[@]+"${select[@]}"} "$@"
