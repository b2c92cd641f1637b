"""A sweep's `grade_by` reaches only the trials of scenarios with state probes, and is left out
of every other trial's payload, so their ids stay as they were."""

from __future__ import annotations

from pathlib import Path

from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.submission.expand import expand, load_sweep
from mcp_farm.workers.grading.grade import scenario_of


def test_a_sweeps_grade_by_reaches_only_trials_of_scenarios_with_probes() -> None:
    path = Path("scenarios/sweeps/quickstart.yaml")
    plain = load_sweep(path)
    both = plain.scenarios.model_copy(update={"suites": ["basic", "state"]})
    without = expand(plain.model_copy(update={"scenarios": both}), str(path))
    sweep = plain.model_copy(update={"scenarios": both, "grade_by": "state"})
    trials = expand(sweep, str(path)).trials
    probed = {s.id for s in load_suite("state").scenarios if s.probes}
    with_probes = [t for t in trials if t.scenario.id in probed]
    others = [t for t in trials if t.scenario.id not in probed]
    assert with_probes and all(t.grade_by == "state" for t in with_probes)
    assert all(scenario_of(t).grading == "state" for t in with_probes)
    assert all(t.grade_by is None and "grade_by" not in t.identity() for t in others)
    # Left out of a sweep without it too: its trials keep the ids they always had.
    assert all("grade_by" not in t.identity() for t in without.trials)
