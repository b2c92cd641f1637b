"""One worker process running several trials at once (`--pool threads`), every trial
recorded once."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.distributed.conftest import (
    Farm,
    wait_until,
)
from tests.distributed.test_farm import (
    counts,
    scripted,
    slow_suite,
)

pytestmark = pytest.mark.integration

SCRIPT = [
    {"call": {"name": "fetch_summary", "arguments": {"report_id": "7"}}},
    {"answer": "Revenue was 1,200."},
]


def test_a_threads_worker_runs_its_sessions_side_by_side(farm: Farm, tmp_path: Path) -> None:
    model = scripted("slowpoke", "cpu", SCRIPT) | {"max_concurrency": 4}
    sweep = {
        "name": "sessions",
        "models": [model],
        "prompts": ["native"],
        "scenarios": {"suites": [str(slow_suite(tmp_path))]},
        "repetitions": 4,
    }
    sweep_id = farm.submit(farm.sweep_file(tmp_path, sweep))
    farm.worker("cpu", "farm-threads@test", "--pool", "threads", "--concurrency", "4")
    wait_until(lambda: counts(farm, sweep_id) == {"done": 4}, 120, "all four trials")

    rows = farm.rows(
        "select started_at, finished_at, outcome, attempts, node from trial where sweep_id = :s",
        s=sweep_id,
    )
    assert {(outcome, attempts, node) for *_, outcome, attempts, node in rows} == {
        ("pass", 1, "farm-threads@test")
    }
    # Every trial spends seconds in its slow tool: run one after another, none would overlap.
    spans = sorted((start, end) for start, end, *_ in rows)
    overlapping = sum(1 for a, b in itertools.pairwise(spans) if b[0] < a[1])
    assert overlapping >= 2
