#!/usr/bin/env bash
# Create .venv (if needed) and install the project with everything the demo and tests need.
# No browser: only the UI test needs one, and scripts/test.sh installs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip setuptools wheel
  .venv/bin/pip install -q -e ".[dev]"
  rm -f .venv/.installed-* && touch "$stamp"
fi
if [ -d /usr/lib/jvm/java-17-openjdk-amd64 ] && [ -z "${JAVA_HOME:-}" ]; then
  export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
fi
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  echo "Java 17 is required for Spark: apt-get install -y openjdk-17-jre-headless" >&2
  exit 1
fi
