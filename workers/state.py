"""Grading by state: each probe's found value against its matcher, and how the state's verdict
and the calls' verdict make the outcome under `grade_by` (docs/state.md).

`wrong_state` is an outcome: the calls passed and the state did not (an effect doubled).
`other_path` is a flag beside the outcome: the state passed and the calls did not. It is a
flag because the outcome already says what was wrong with the calls, and a scorecard counts
the flag per configuration and tool without losing that.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mcp_farm.schema import (
    UNGRADED,
    GradeBy,
    Outcome,
    ProbeResult,
    Scenario,
    StateProbe,
    StateVerdict,
    TurnResult,
)
from mcp_farm.workers.grading.chained import value_at
from mcp_farm.workers.grading.matchers import check
from mcp_farm.workers.grading.typed import BY_VALUE

CALLS_RIGHT: tuple[Outcome, ...] = ("pass", "output_mismatch")
"""Calls outcomes in which every call was right (the answer's text aside)."""

UNDECIDED: tuple[Outcome, ...] = (*UNGRADED, "timeout")
"""Outcomes neither calls nor state decide: the trial says nothing about either."""

KEPT_BY_STATE: tuple[Outcome, ...] = (*UNDECIDED, "forbidden_call", "guessed")
"""Under `grade_by: state`, outcomes the state does not overrule: a forbidden call was made,
or the agent guessed where it had to ask, whatever the world became."""

UNREADABLE = "\x00unreadable"
"""What `found` holds for a value a probe could not read as asked."""


def judged(probe: StateProbe, value: Any, turn: int | None, readable: bool = True) -> ProbeResult:
    """A probe's result: the value found (all of it, as JSON, so a rescore can judge it again)
    and the matcher's verdict on the part `at` names."""
    expected = json.dumps(probe.expect.model_dump(mode="json", exclude_defaults=True))
    if readable:
        found = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        problem = _problem(probe, value)
    else:
        how = {"json": "JSON", "structured": "structured content"}.get(probe.read, "text")
        found, problem = UNREADABLE, f"the value could not be read as {how}"
    return ProbeResult(
        turn=turn,
        label=probe.name,
        kind=probe.kind,
        expected=expected,
        found=found,
        problem=problem,
    )


def rejudged(probe: StateProbe, result: ProbeResult) -> ProbeResult:
    """A stored probe result judged again by the probe as the scenario now writes it (`farm
    rescore`): the value found stays, the verdict follows the matcher."""
    if result.found == UNREADABLE:
        return judged(probe, None, result.turn, readable=False)
    return judged(probe, json.loads(result.found), result.turn)


def _problem(probe: StateProbe, value: Any) -> str | None:
    part = value_at(value, probe.at) if probe.at else value
    problem = check(probe.expect, part, typed=BY_VALUE)
    if problem is None:
        return None
    where = f" at {probe.at}" if probe.at else ""
    return f"{probe.name}: found{where} {_short(part)}: {problem}"


def _told(probe: ProbeResult) -> str:
    where = f"after turn {probe.turn + 1}: " if probe.turn is not None else ""
    return f"{where}{probe.problem}"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 160 else text[:157] + "…"


def combined(
    grade_by: GradeBy,
    outcome: Outcome,
    detail: str,
    probes: Sequence[ProbeResult],
) -> tuple[Outcome, str, StateVerdict | None]:
    """The outcome and detail under `grade_by`, from the calls' outcome and the probes run;
    with the state verdict (None where no probe ran)."""
    if not probes:
        return outcome, detail, None
    state_ok = all(p.passed for p in probes)
    calls_ok = outcome in CALLS_RIGHT
    verdict = StateVerdict(
        grade_by=grade_by,
        passed=state_ok,
        calls_passed=calls_ok,
        calls_outcome=outcome,
        other_path=state_ok and not calls_ok and outcome not in KEPT_BY_STATE,
        probes=list(probes),
    )
    if outcome in UNDECIDED or grade_by == "calls":
        return outcome, detail, verdict
    failing = next((_told(p) for p in probes if p.problem), "")
    if grade_by == "both":
        if calls_ok and not state_ok:
            return "wrong_state", f"the calls passed; the state did not: {failing}", verdict
        return outcome, detail, verdict
    if outcome in KEPT_BY_STATE:
        return outcome, detail, verdict
    if not state_ok:
        return "wrong_state", failing, verdict
    if outcome == "output_mismatch":
        return outcome, detail, verdict
    told = f"passed by state (the calls: {outcome}: {detail})" if not calls_ok else ""
    return "pass", told, verdict


def turn_by_state(scenario: Scenario, turn: TurnResult) -> tuple[Outcome, str]:
    """A turn's outcome and detail with its own probes (`state:` of the turn) weighed in."""
    outcome, detail, _ = combined(scenario.grading, turn.outcome, turn.detail, turn.probes)
    return outcome, detail


def graded_by_state(
    scenario: Scenario,
    turns: list[TurnResult],
    outcome: Outcome,
    detail: str,
    end: Sequence[ProbeResult],
) -> tuple[list[TurnResult], Outcome, str, StateVerdict | None]:
    """The turns and the trial under `grade_by`: each turn with its own probes, the trial with
    every probe (each turn's and the scenario's own, run at the end). `outcome` is the calls'
    verdict of the whole trial."""
    weighed = []
    for turn in turns:
        own, why = turn_by_state(scenario, turn)
        weighed.append(turn.model_copy(update={"outcome": own, "detail": why}))
    probes = [p for t in turns for p in t.probes] + list(end)
    final, told, verdict = combined(scenario.grading, outcome, detail, probes)
    if verdict is not None:
        verdict.diverged = [t.index for t in turns if t.diverged]
        verdict.restored = [t.index for t in turns if t.restored]
    return weighed, final, told, verdict


def rejudged_all(
    scenario: Scenario, turns: list[TurnResult], end: Sequence[ProbeResult]
) -> tuple[list[TurnResult], list[ProbeResult]]:
    """Stored probe results judged again by the probes the scenario now writes, matched by
    position (a probe added since was never run: it is left out)."""
    again = []
    for turn in turns:
        said = scenario.dialogue()
        written = said[turn.index].state if turn.index < len(said) else []
        found = [rejudged(p, r) for p, r in zip(written, turn.probes, strict=False)]
        again.append(turn.model_copy(update={"probes": found}))
    return again, [rejudged(p, r) for p, r in zip(scenario.state, end, strict=False)]
