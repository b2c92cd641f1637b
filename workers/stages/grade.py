"""The grade stage: the driver's verdict of the trial's calls, then its state's (`grade_by`), and a
failure after the last turn weighed in. A grader that cannot grade, or breaks, makes the trial
an infrastructure or harness error; never the model's."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from mcp_farm.schema import (
    UNGRADED,
    FarmError,
    Scenario,
    StateVerdict,
    StopReason,
    TurnResult,
)
from mcp_farm.workers.errors import InfraError, harness_detail
from mcp_farm.workers.grading.grade import Graded
from mcp_farm.workers.session import SessionState
from mcp_farm.workers.stages.ended import Ended
from mcp_farm.workers.state import CALLS_RIGHT, graded_by_state

# The trial's log, wherever its stages are written.
logger = logging.getLogger("mcp_farm.workers.trial")


@dataclass(frozen=True)
class Grading:
    """The trial's verdict, with the turns and the state verdict it was made of."""

    stop: StopReason
    """What ended the trial: the session's stop, or the grader's failure."""
    verdict: Graded
    turns: list[TurnResult]
    """The turns as far as grading got (as the session left them, if it got nowhere)."""
    state: StateVerdict | None
    """The state probes' verdict, where the state was weighed in."""


def grade(scenario: Scenario, ended: Ended) -> Grading:
    """The trial's verdict: its calls' (the driver's grading), then its state's."""
    state, stop = ended.state, ended.stop
    turns = state.turn_results
    state_verdict: StateVerdict | None = None
    try:
        why = ended.problem or state.format_error or state.limit_detail or ""
        turns, verdict = ended.driver.grade_calls(scenario, state, stop, ended.schemas, why)
        if verdict.outcome not in UNGRADED:
            turns, outcome, detail, state_verdict = graded_by_state(
                scenario,
                turns,
                verdict.outcome,
                verdict.detail,
                state.probes,
                state.calls,
                state.read_only,
            )
            verdict = replace(
                verdict,
                outcome=outcome,
                detail=detail,
                first_try=verdict.first_try and outcome == "pass",
            )
    except InfraError as exc:  # the grader's own, which says it could not grade
        stop, verdict = "infra_error", Graded("infra_error", str(exc))
    except FarmError as exc:
        # A pattern or schema that cannot be applied (the scenario's or a server's), not the
        # model's doing: the trial is recorded as an infrastructure error naming it.
        stop, verdict = "infra_error", Graded("infra_error", f"cannot grade: {exc}")
    except Exception as exc:  # a bug in the grader: the farm's, never the model's
        logger.exception("trial %s: grading hit a bug in the farm", ended.trial_id[:12])
        stop, verdict = "harness_error", Graded("harness_error", harness_detail(exc))
    verdict = after_grading(verdict, stop, ended.problem, scenario, state)
    return Grading(stop, verdict, turns, state_verdict)


def after_grading(
    verdict: Graded, stop: StopReason, problem: str, scenario: Scenario, state: SessionState
) -> Graded:
    """The verdict, unless the session failed after its last turn was graded: a state probe
    that could not look, a cassette that could not be written, the clock running out while
    the probes ran. The turns' grades cannot say so (each passed before it happened), and a
    pass would then claim a state nobody read: the failure is the trial's outcome. A trial
    whose calls already failed keeps that verdict (the failure came after it was decided)."""
    if verdict.outcome not in CALLS_RIGHT:
        return verdict
    if stop == "infra_error":
        return Graded("infra_error", problem or "an infrastructure failure after the last turn")
    if stop == "harness_error":
        return Graded("harness_error", problem or "a bug in the farm after the last turn")
    if stop == "time_limit" and scenario.state and not state.probes:
        return Graded(
            "timeout",
            f"the scenario's {scenario.time_limit_s:g} s ran out before its state probes ran",
        )
    return verdict
