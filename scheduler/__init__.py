"""Control plane: CLI, matrix expansion, submission, progress, scorecards, reports."""

from scheduler.aggregate import aggregate, scorecard_of, stored_scorecard
from scheduler.embedded import run_embedded
from scheduler.expand import Plan, expand, load_sweep, with_endpoint
from scheduler.scorecard import build_scorecard
from scheduler.stats import percentiles, wilson
from scheduler.submit import record_plan, runnable_ids

__all__ = [
    "Plan",
    "aggregate",
    "build_scorecard",
    "expand",
    "load_sweep",
    "percentiles",
    "record_plan",
    "run_embedded",
    "runnable_ids",
    "scorecard_of",
    "stored_scorecard",
    "wilson",
    "with_endpoint",
]
