"""Control plane: CLI, matrix expansion, submission, progress, scorecards, reports."""

from mcp_farm.scheduler.scorecard.aggregate import (
    aggregate,
    scorecard_of,
    stored_scorecard,
)
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.statistics.rates import (
    percentiles,
    wilson,
)
from mcp_farm.scheduler.submission.embedded import run_embedded
from mcp_farm.scheduler.submission.expand import (
    Plan,
    expand,
    load_sweep,
    with_endpoint,
)
from mcp_farm.scheduler.submission.submit import (
    record_plan,
    runnable_ids,
)

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
