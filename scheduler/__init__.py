"""Control plane: CLI, matrix expansion, submission, progress, scorecards, reports."""

from scheduler.embedded import load_task, run_embedded
from scheduler.expand import Plan, expand, load_sweep, with_endpoint
from scheduler.scorecard import Cell, Scorecard, build_scorecard
from scheduler.stats import percentiles, wilson
from scheduler.submit import record_plan, runnable_ids

__all__ = [
    "Cell",
    "Plan",
    "Scorecard",
    "build_scorecard",
    "expand",
    "load_sweep",
    "load_task",
    "percentiles",
    "record_plan",
    "run_embedded",
    "runnable_ids",
    "wilson",
    "with_endpoint",
]
