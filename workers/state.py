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
    ToolCallRecord,
    TurnResult,
)
from mcp_farm.workers.grading.chained import value_at
from mcp_farm.workers.grading.matchers import check
from mcp_farm.workers.grading.normal import same_json
from mcp_farm.workers.grading.typed import BY_VALUE

CALLS_RIGHT: tuple[Outcome, ...] = ("pass", "output_mismatch")
"""Calls outcomes in which every call was right (the answer's text aside)."""

UNDECIDED: tuple[Outcome, ...] = (*UNGRADED, "context_overflow", "timeout")
"""Outcomes neither calls nor state decide: the trial says nothing about either (a prompt that
did not fit was never answered, whatever the state)."""

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
    """Why the value does not fit, where: for an `exact` matcher, the first JSON paths where
    expected and found differ, each with both values, short; for any other, the matcher's own
    reason beside the part judged. The whole values stay in the ProbeResult (the trial page)."""
    part = value_at(value, probe.at) if probe.at else value
    problem = check(probe.expect, part, typed=BY_VALUE)
    if problem is None:
        return None
    matcher = probe.expect
    while matcher.optional is not None:
        matcher = matcher.optional
    if matcher.kind == "exact":
        found = differences(matcher.exact, part, probe.at or "")
        if found:
            return f"{probe.name}: {_places(found)}"
    where = f" at {probe.at}" if probe.at else ""
    reason = problem if len(problem) <= SHORT * 3 else problem[: SHORT * 3 - 1] + "…"
    return f"{probe.name}: found{where} {_short(part)}: {reason}"


SHORT = 60
"""Characters of one value a verdict's detail shows (the trial page shows it whole)."""

PLACES = 3
"""Places where expected and found differ that a verdict's detail names."""

ABSENT = object()
"""A key or item one side does not have."""


def differences(expected: Any, found: Any, path: str = "", limit: int = 50) -> list[Place]:
    """The places (JSON paths from `path`, in document order, at most `limit`) where `found`
    differs from `expected`, each with both values; numbers compare by value, as probes do.
    Empty when they are the same."""
    out: list[Place] = []
    _walk(expected, found, path, out, limit)
    return out


Place = tuple[str, Any, Any]
"""A JSON path, the value expected there and the value found (ABSENT: not there)."""


def _walk(expected: Any, found: Any, path: str, out: list[Place], limit: int) -> None:
    if len(out) >= limit or same_json(found, expected, typed=BY_VALUE):
        return
    if isinstance(expected, dict) and isinstance(found, dict):
        keys = [*expected, *(k for k in found if k not in expected)]
        for key in keys:
            below = _key_path(path, key)
            _walk(expected.get(key, ABSENT), found.get(key, ABSENT), below, out, limit)
        return
    if isinstance(expected, list) and isinstance(found, list):
        for i in range(max(len(expected), len(found))):
            e = expected[i] if i < len(expected) else ABSENT
            f = found[i] if i < len(found) else ABSENT
            _walk(e, f, f"{path}[{i}]", out, limit)
        return
    if expected is ABSENT and found is ABSENT:
        return
    out.append((path, expected, found))


def _key_path(path: str, key: str) -> str:
    """`path` and one key more, as `at:` writes it; a key that path syntax cannot hold (empty,
    or with `.`, `[` or `]`) as a quoted `["key"]`."""
    if key and not any(c in key for c in ".[]"):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _places(found: list[Place]) -> str:
    """The first PLACES places, each `at PATH: expected E, found F`, and how many more."""
    shown = []
    for path, expected, value in found[:PLACES]:
        e, f = _pair(expected, value)
        where = f"at {path}: " if path else ""
        shown.append(f"{where}expected {e}, found {f}")
    more = len(found) - PLACES
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def _pair(expected: Any, found: Any) -> tuple[str, str]:
    """Both values, short; two long strings are shown from a little before where they first
    differ, so the difference is in what is shown."""
    if isinstance(expected, str) and isinstance(found, str):
        same = next(
            (i for i, (a, b) in enumerate(zip(expected, found, strict=False)) if a != b),
            min(len(expected), len(found)),
        )
        start = max(0, same - SHORT // 3)
        if start:
            return _cut(expected, start), _cut(found, start)
    return _short(expected), _short(found)


def _cut(text: str, start: int) -> str:
    part = json.dumps(text[start:], ensure_ascii=False)[1:-1]
    return f'"…{part[:SHORT]}{"…" if len(part) > SHORT else ""}"'


def _short(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= SHORT else text[: SHORT - 1] + "…"


def _told(probe: ProbeResult) -> str:
    where = f"after turn {probe.turn + 1}: " if probe.turn is not None else ""
    return f"{where}{probe.problem}"


def combined(
    grade_by: GradeBy,
    outcome: Outcome,
    detail: str,
    probes: Sequence[ProbeResult],
    path: bool = True,
) -> tuple[Outcome, str, StateVerdict | None]:
    """The outcome and detail under `grade_by`, from the calls' outcome and the probes run;
    with the state verdict (None where no probe ran). `path`: whether a state that fits can
    be the model's other path (`another_path`); False, it is never flagged `other_path`."""
    if not probes:
        return outcome, detail, None
    state_ok = all(p.passed for p in probes)
    calls_ok = outcome in CALLS_RIGHT
    verdict = StateVerdict(
        grade_by=grade_by,
        passed=state_ok,
        calls_passed=calls_ok,
        calls_outcome=outcome,
        other_path=path and state_ok and not calls_ok and outcome not in KEPT_BY_STATE,
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


def another_path(
    scenario: Scenario,
    turns: Sequence[TurnResult],
    calls: Sequence[ToolCallRecord] | None,
    read_only: frozenset[str],
) -> bool:
    """Whether a state that fits, beside calls that do not, can be the model's other path to
    it. Not where the farm had a hand in the state (it set a turn back, made calls of its own
    after a failed turn, or a turn diverged), nor where nothing could have changed it: the
    model's calls and every expected call are of tools their servers mark read-only (or the
    model made none), so a probe that fits only says nothing changed. `calls`: None when they
    are not known (judged by the turns alone)."""
    if any(t.restored or t.diverged or t.farm_calls for t in turns):
        return False
    if calls is None:
        return True
    wrote = any(c.tool not in read_only for c in calls)
    return wrote and bool(scenario.accepted_tools - read_only)


def graded_by_state(
    scenario: Scenario,
    turns: list[TurnResult],
    outcome: Outcome,
    detail: str,
    end: Sequence[ProbeResult],
    calls: Sequence[ToolCallRecord] | None = None,
    read_only: frozenset[str] = frozenset(),
) -> tuple[list[TurnResult], Outcome, str, StateVerdict | None]:
    """The turns and the trial under `grade_by`: each turn with its own probes, the trial with
    every probe (each turn's and the scenario's own, run at the end). `outcome` is the calls'
    verdict of the whole trial; `calls` (the model's) and `read_only` (the tools marked
    read-only) say whether a state that fits can be another path's (`another_path`)."""
    weighed = []
    for turn in turns:
        own, why = turn_by_state(scenario, turn)
        weighed.append(turn.model_copy(update={"outcome": own, "detail": why}))
    probes = [p for t in turns for p in t.probes] + list(end)
    path = another_path(scenario, turns, calls, read_only)
    final, told, verdict = combined(scenario.grading, outcome, detail, probes, path)
    if verdict is not None:
        verdict.diverged = [t.index for t in turns if t.diverged]
        verdict.diverged_by = {t.index: t.diverged_by for t in turns if t.diverged_by}
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
