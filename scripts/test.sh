#!/usr/bin/env bash
# The project's test command: set up, start what the tests need, lint, type-check, test.
#   bash scripts/test.sh          everything CI runs: services, the real model, fault tests
#   bash scripts/test.sh --fast   unit tests only: no services, no real model, no fault tests
# Other arguments go to pytest (e.g. `bash scripts/test.sh -k scorecard`).
set -euo pipefail
cd "$(dirname "$0")/.."
fast=false
if [ "${1:-}" = "--fast" ]; then
  fast=true
  shift
fi
bash scripts/setup.sh --dev
$fast || bash scripts/services.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
if $fast; then
  .venv/bin/python -m pytest -m "not slow and not integration and not faults and not services" "$@"
else
  # The slowest tests are listed at the end, so a CI log shows where its time went.
  .venv/bin/python -m pytest --durations=25 "$@"
fi
