"""The attribute stage: whose mistake a failure was (the driver's word, for a simulated user),
whether the model recovered from its error results, and the step verdicts the record keeps.
A pattern past its budget leaves these unknown; the verdict stands."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from mcp_farm.schema import UNGRADED, FailureSource, FarmError, Scenario, StepVerdict
from mcp_farm.workers.grading.conversation import recovered, trial_steps
from mcp_farm.workers.stages.ended import Ended
from mcp_farm.workers.stages.grade import Grading

# The trial's log, wherever its stages are written.
logger = logging.getLogger("mcp_farm.workers.trial")


@dataclass(frozen=True)
class Attribution:
    """What the record says of a verdict beyond the outcome."""

    source: FailureSource | None = None
    """Whose mistake a failure was; None where the driver cannot say, or it is unknown."""
    recovered: bool | None = None
    """Whether every error result was followed by a step done; None when none came or unknown."""
    steps: list[StepVerdict] = field(default_factory=list)
    """The step verdicts kept at the trial's level (`trial_steps`)."""


def attribute(scenario: Scenario, ended: Ended, grading: Grading) -> Attribution:
    """Attribute the graded trial: the failure's source, then recovery and the steps."""
    state, verdict, trial = ended.state, grading.verdict, ended.trial_id[:12]
    source = None
    try:
        source = ended.driver.attribute(scenario, verdict, state, ended.schemas)
    except FarmError:  # a pattern past its budget: the verdict stands, the source unknown
        logger.warning("trial %s: failure source unknown", trial, exc_info=True)
    if verdict.outcome in UNGRADED:
        return Attribution(source)
    recovery: bool | None = None
    steps: list[StepVerdict] = []
    try:
        recovery = recovered(scenario, state.calls, verdict.route, grading.turns)
        steps = trial_steps(scenario, grading.turns, state.calls, verdict.route, ended.schemas)
    except FarmError:  # a pattern past its budget: the verdict stands, these unknown
        logger.warning("trial %s: recovery left unknown", trial, exc_info=True)
    return Attribution(source, recovery, steps)
