"""Scoring stored transcripts again, without the model: `farm rescore` and the anchor gate.

A rescore re-grades the deterministic outcome from the recorded calls (the tools' schemas are
listed again from the servers; no model is asked), re-checks citations and keywords, and judges
again, writing new rows under a new scoring id. Nothing recorded before is changed.

The outcome is graded as the live trial was (`scenario_of`: the sweep's `calls:` included).
Results are stored as the model was shown them, cut at `result_chars`; the whole text is not
kept, so chained values are looked for in the shown text only (without the cut notice).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mcp_farm.scenarios.anchors import (
    anchor_folder,
    load_anchors,
)
from mcp_farm.schema import (
    UNGRADED,
    Elicitation,
    Message,
    ProbeResult,
    Scenario,
    Settings,
    SpecError,
    StateVerdict,
    ToolCallRecord,
    TrialSpec,
    TurnResult,
    UserSimRecord,
)
from mcp_farm.schema.tasks.messages import (
    AnchorJudgingRequest,
    AnchorJudgingResult,
    ProbeRegrade,
    RescoreRequest,
    RescoreResult,
    read_message,
)
from mcp_farm.workers.answer.scoring import (
    Transcript,
    judge_runs,
    score_answer,
    shown_to_judge,
)
from mcp_farm.workers.grading.conversation import grade_conversation, stored_turns
from mcp_farm.workers.grading.grade import (
    Graded,
    scenario_of,
)
from mcp_farm.workers.mcp.connections import connect
from mcp_farm.workers.mcp.pool import ServerPool
from mcp_farm.workers.node.runtime import get_runtime
from mcp_farm.workers.node.tasks import engine_for
from mcp_farm.workers.state import graded_by_state, rejudged_all
from mcp_farm.workers.store.rescoring import recorded_trial, save_rescore
from mcp_farm.workers.trial import (
    attached,
    judge_for,
)
from mcp_farm.workers.usersim.grade import grade_simulated

if TYPE_CHECKING:
    from mcp_farm.schema.db import ToolCallRow


CUT_NOTICE = re.compile(r"\n\[result cut: \d+ more characters not shown\]\Z")
"""The line `shown_text` (workers/mcp/connections.py) adds to a cut result: not part of the
result."""


def _calls(rows: list[ToolCallRow], transcript: list[Message]) -> list[ToolCallRecord]:
    """The recorded calls with the result text the model saw (the i-th tool message), less the
    notice of a cut, whose count would otherwise pass for a number in the result."""
    results = [CUT_NOTICE.sub("", m.content) for m in transcript if m.role == "tool" and not m.farm]
    calls = []
    for row in rows:
        shown = results[row.idx] if row.idx < len(results) else ""
        calls.append(
            ToolCallRecord(
                index=row.idx,
                server=row.server,
                tool=row.tool,
                arguments=json.loads(row.arguments_json),
                ok=row.ok,
                error=row.error,
                result_text=shown if row.ok else "",
                result_digest=row.result_digest,
                latency_s=row.latency_s,
            )
        )
    return calls


async def _schemas(
    spec: TrialSpec, scenario: Scenario, pool: ServerPool
) -> tuple[dict[str, Any], frozenset[str], frozenset[str]]:
    """The attached tools' input schemas, those marked destructive and those marked read-only,
    listed again from the servers (no model involved)."""
    async with connect(attached(spec, scenario), pool, spec.prompt.tool_naming) as conn:
        tools = conn.tools.values()
        return (
            {t.tool: t.input_schema for t in tools},
            frozenset(t.tool for t in tools if t.destructive),
            frozenset(t.tool for t in tools if t.read_only),
        )


def _by_state(
    scenario: Scenario, turns: list[TurnResult], verdict: Graded, stored: str
) -> tuple[Graded, list[ProbeRegrade]]:
    """The verdict under `grade_by`, with the probes' recorded findings judged again by the
    probes as the scenario writes them now (a rescore never looks at the servers again); and
    each probe whose verdict that changed."""
    if verdict.outcome in UNGRADED:
        return verdict, []
    found = StateVerdict.model_validate_json(stored).probes if stored else []
    turns, end = rejudged_all(scenario, turns, [p for p in found if p.turn is None])
    _turns, outcome, detail, _state = graded_by_state(
        scenario, turns, verdict.outcome, verdict.detail, end
    )
    now = [p for t in turns for p in t.probes] + end
    return replace(verdict, outcome=outcome, detail=detail), regraded_probes(found, now)


def regraded_probes(before: list[ProbeResult], now: list[ProbeResult]) -> list[ProbeRegrade]:
    """The probes whose verdict differs, matched by their place among the probes run after
    the same turn (a probe added since was never run, one removed is not judged again)."""
    by_turn: dict[int | None, list[ProbeResult]] = {}
    for p in before:
        by_turn.setdefault(p.turn, []).append(p)
    seen: dict[int | None, int] = {}
    changed = []
    for p in now:
        k = seen[p.turn] = seen.get(p.turn, -1) + 1
        was = by_turn.get(p.turn, [])
        if k < len(was) and was[k].passed != p.passed:
            changed.append(
                ProbeRegrade(
                    label=p.label, turn=p.turn, passed_before=was[k].passed, passed_now=p.passed
                )
            )
    return changed


async def _rescore(request: RescoreRequest, settings: Settings, pool: ServerPool) -> RescoreResult:
    engine = engine_for(settings.resolved_database_url())
    judge = request.judge
    trial, call_rows = recorded_trial(engine, request.trial_id)
    spec = TrialSpec.model_validate_json(trial.payload_json)
    scenario = scenario_of(spec)  # the sweep's `calls:` too, as the trial was graded
    transcript = [Message.model_validate(m) for m in json.loads(trial.transcript_json)]
    calls = _calls(call_rows, transcript)
    schemas, destructive, read_only = await _schemas(spec, scenario, pool)
    stop = trial.stop_reason or "turn_limit"
    elicited = [Elicitation.model_validate(e) for e in json.loads(trial.elicitations_json)]
    turns: list[TurnResult] = []
    if scenario.user_sim is not None and trial.user_sim_json:
        verdict = grade_simulated(
            scenario,
            UserSimRecord.model_validate_json(trial.user_sim_json),
            calls,
            trial.final_answer,
            transcript,
            stop,  # type: ignore[arg-type]
            schemas,
            trial.detail,
        )
    else:  # every other trial is a conversation, a one-prompt one of one turn
        kept = [TurnResult.model_validate(t) for t in json.loads(trial.turns_json)]
        turns = stored_turns(scenario, kept, calls, trial.final_answer, stop)  # type: ignore[arg-type]
        turns, verdict = grade_conversation(
            scenario,
            turns,
            calls,
            stop,  # type: ignore[arg-type]
            schemas,
            trial.detail,
            destructive,
            elicited,
            read_only,
        )
    verdict, probes = _by_state(scenario, turns, verdict, trial.state_json)
    if scenario.answer is None:
        # No answer scoring (a conversation, a trial with probes): graded again, nothing stored.
        return RescoreResult(
            trial_id=trial.trial_id,
            outcome=verdict.outcome,
            recorded_outcome=trial.outcome,
            fairness=None,
            probes=probes,
        )
    score = await score_answer(
        trial=Transcript(
            trial_id=trial.trial_id,
            sweep_id=trial.sweep_id,
            outcome=verdict.outcome,
            transcript=transcript,
            calls=calls,
            latency_s=trial.latency_s or 0.0,
            tokens_prompt=trial.tokens_prompt if trial.tokens_measured else None,
            tokens_completion=trial.tokens_completion if trial.tokens_measured else None,
            final_answer=trial.final_answer,
            seed=spec.seed,
        ),
        scenario=scenario,
        suite=spec.scenario.suite,
        toolset=spec.toolset,
        settings=judge,
        judge=judge_for(judge, settings),
        repos=settings.data_dir / "repos",
        scoring=request.scoring_id,
    )
    save_rescore(engine, score, trial.model_id, trial.prompt_id, trial.scenario_id)
    return RescoreResult(
        trial_id=trial.trial_id,
        outcome=verdict.outcome,
        recorded_outcome=trial.outcome,
        fairness=score.fairness,
        probes=probes,
    )


def rescore_trial(
    payload: RescoreRequest | dict[str, Any], settings: Settings, **_options: Any
) -> RescoreResult:
    """Task `farm.rescore_trial`: one recorded trial graded and scored again (new rows)."""
    request = read_message("farm.rescore_trial", payload, RescoreRequest)
    runtime = get_runtime(settings)
    result: RescoreResult = runtime.portal.call(_rescore, request, settings, runtime.pool)
    return result


async def _judge_anchors(request: AnchorJudgingRequest, settings: Settings) -> AnchorJudgingResult:
    anchors = load_anchors(anchor_folder(request.folder), request.rubric)
    judge_settings = request.judge
    judge = judge_for(judge_settings, settings)
    if judge is None:
        raise SpecError("anchors", "judge.model", "the anchor gate needs a judge model")
    means: dict[str, dict[str, float | None]] = {}
    unreadable, judge_s = 0, 0.0
    for i, anchor in enumerate(anchors.anchors):
        shown = shown_to_judge(anchors.answers[anchor.id], anchor.request, anchor.answer)
        scores, _tokens, _estimated, _hash, seconds = await judge_runs(
            judge, judge_settings, anchors.rubric_id, shown, seed=10 * i
        )
        judge_s += seconds
        found: dict[str, list[float]] = {s.criterion: [] for s in scores}
        for s in scores:
            if s.score is None:
                unreadable += 1
            else:
                found[s.criterion].append(s.score)
        means[anchor.id] = {c: sum(v) / len(v) if v else None for c, v in found.items()}
    return AnchorJudgingResult(
        judge=judge.model_id, scores=means, unreadable=unreadable, judge_s=judge_s
    )


def judge_anchors(
    payload: AnchorJudgingRequest | dict[str, Any], settings: Settings, **_options: Any
) -> AnchorJudgingResult:
    """Task `farm.judge_anchors`: the judge's mean score per anchor and criterion."""
    request = read_message("farm.judge_anchors", payload, AnchorJudgingRequest)
    runtime = get_runtime(settings)
    result: AnchorJudgingResult = runtime.portal.call(_judge_anchors, request, settings)
    return result
