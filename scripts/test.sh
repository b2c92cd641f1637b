#!/usr/bin/env bash
# The project's test command: set up, start what the tests need, lint, type-check, test.
#   bash scripts/test.sh          everything CI runs: services, the real model, fault tests
#   bash scripts/test.sh --fast   unit tests only: no services, no real model, no fault tests
# Other arguments go to pytest, in every lane (e.g. `bash scripts/test.sh -k scorecard`).
#
# The full run is three lanes side by side, each logging to .test-lanes/<lane>.log (shown at
# the end, with each lane's 25 slowest tests and its wall and CPU time):
#   parallel    everything that owns no shared service, on FARM_TEST_WORKERS pytest-xdist workers
#   faults      the fault tests, one at a time: they start, kill and restart their own
#               Redis and PostgreSQL
#   real-model  the llama.cpp tests, one at a time, each model decoding on one thread
#               (FARM_LOCAL_THREADS=1): llama.cpp's threads spin while they wait for each
#               other, and beside other lanes a thread that loses its core stalls the rest
# Redis databases: real-model uses FARM_TEST_REDIS's (default 9), faults the next one, and
# xdist worker gwN the one after those plus N (tests/conftest.py), so no two lanes share one.
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
  exec .venv/bin/python -m pytest -m "not slow and not integration and not faults and not services" "$@"
fi

workers=${FARM_TEST_WORKERS:-3}
redis=${FARM_TEST_REDIS:-redis://127.0.0.1:6379/9}
redis_host=${redis%/*}
redis_db=${redis##*/}
if [ $((redis_db + 1 + workers)) -gt 15 ]; then
  echo "test.sh: Redis databases $redis_db..$((redis_db + 1 + workers)) needed; Redis has 0..15" >&2
  exit 2
fi
logs=.test-lanes
rm -rf "$logs" && mkdir -p "$logs"

lane() {  # lane NAME REDIS_DB PYTEST_ARGS...: run pytest in the background, logging its times
  local name=$1 db=$2
  shift 2
  (
    TIMEFORMAT="%R %U %S"
    { time FARM_TEST_REDIS="$redis_host/$db" nice -n "${LANE_NICE:-0}" \
        .venv/bin/python -m pytest --durations=25 "$@" >"$logs/$name.log" 2>&1; } \
      2>"$logs/$name.time" || exit $?
  ) &
  pids+=("$!")
  names+=("$name")
}

pids=()
names=()
# The fault tests, one at a time, beside the parallel lane and then the real-model lane: they
# mostly wait (for a reaper, a stale window, a restarted service), so they take little CPU.
# They all live in tests/faults: collecting only that folder saves the lane a whole-suite
# collection, unless the caller named paths of their own.
where=(tests/faults)
for arg in "$@"; do
  if [ -e "${arg%%::*}" ]; then
    where=()
  fi
done
# All three start together: the real model's replies are bounded by their thread's CPU time,
# not the wall clock, and on one thread no reply waits on a thread that lost its core, so a
# busy machine slows the lane without changing what it measures. The parallel lane runs at a
# lower priority: the real-model lane is one thread that would otherwise get a third of a core
# beside it and end last, alone, with the other core idle; this way it keeps one core and the
# parallel lane takes the rest.
FARM_LOCAL_THREADS=1 lane real-model "$redis_db" -m slow "$@"
lane faults "$((redis_db + 1))" -m "faults and not slow" "${where[@]}" "$@"
LANE_NICE=10 lane parallel "$((redis_db + 1))" -m "not slow and not faults" -n "$workers" "$@"
codes=()
for i in "${!pids[@]}"; do
  code=0
  wait "${pids[$i]}" || code=$?
  codes+=("$code")
done

failed=0
ran=0
summary=""
for i in "${!names[@]}"; do
  name=${names[$i]} code=${codes[$i]}
  echo "======================== lane: $name (pytest exit $code) ========================"
  cat "$logs/$name.log"
  read -r wall user sys <"$logs/$name.time" || wall=? user=? sys=?
  summary+=$(printf '\n  %-11s exit %-3s wall %7ss   CPU %7ss user + %6ss sys' \
    "$name" "$code" "$wall" "$user" "$sys")
  # Exit 5 (no tests collected) fails a lane: a marker typo must not pass as green. Only when
  # the caller narrowed the run (-k, a path) may a lane find nothing, if another lane ran.
  if [ "$code" = 5 ] && [ $# -gt 0 ]; then
    continue
  fi
  [ "$code" = 0 ] && ran=1 || failed=1
done
echo "======================== lane times ========================${summary}"
[ "$failed" = 0 ] && [ "$ran" = 1 ] || { echo "test.sh: a lane failed" >&2; exit 1; }
