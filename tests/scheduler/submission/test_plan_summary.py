"""The line `farm run` and `farm sweep submit` print first: its factors multiply to its total."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from mcp_farm.scheduler.submission.expand import expand, load_sweep
from mcp_farm.scheduler.submission.submit import plan_summary

SWEEPS = Path(__file__).resolve().parents[3] / "scenarios" / "sweeps"


@pytest.mark.parametrize("name", ["quickstart", "robustness", "robustness-select"])
def test_the_plan_line_multiplies_to_the_number_of_trials(name: str) -> None:
    path = SWEEPS / f"{name}.yaml"
    plan = expand(load_sweep(path), str(path))
    line = plan_summary(plan)
    factors, _, total = line.partition(" = ")
    counts = [int(n) for n in re.findall(r"(\d+) [a-z -]+\(s\)", factors)]
    assert math.prod(counts) == int(total.split()[0]) == len(plan.trials), line
