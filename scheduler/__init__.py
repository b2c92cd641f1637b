"""Control plane: CLI, matrix expansion, submission, progress, scorecards, reports."""

from scheduler.aggregate import aggregate, stored_scorecard
from scheduler.embedded import run_embedded
from scheduler.expand import Plan, expand, load_sweep, with_endpoint
from scheduler.scorecard import Cell, Scorecard, build_scorecard
from scheduler.stats import percentiles, wilson
from scheduler.submit import record_plan, runnable_ids

__all__ = [
    "Cell",
    "Plan",
    "Scorecard",
    "aggregate",
    "build_scorecard",
    "expand",
    "load_sweep",
    "percentiles",
    "record_plan",
    "run_embedded",
    "runnable_ids",
    "stored_scorecard",
    "wilson",
    "with_endpoint",
]
