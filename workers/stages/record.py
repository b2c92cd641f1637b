"""The record stage: the TrialResult of a graded and attributed trial, with its provenance; with a
judge, its answer scored after the clock stopped (a score that breaks is logged, and the trial
is recorded all the same)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from mcp_farm.schema import (
    UNGRADED,
    AnswerScore,
    JudgeSettings,
    Scenario,
    Settings,
    TrialResult,
    TrialSpec,
)
from mcp_farm.workers.answer.judge import Judge, make_judge
from mcp_farm.workers.answer.scoring import Transcript, score_answer
from mcp_farm.workers.grading.conversation import recorded_turns
from mcp_farm.workers.node.provenance import provenance
from mcp_farm.workers.stages.attribute import Attribution
from mcp_farm.workers.stages.ended import Ended
from mcp_farm.workers.stages.grade import Grading

# The trial's log, wherever its stages are written.
logger = logging.getLogger("mcp_farm.workers.trial")


async def record(
    spec: TrialSpec,
    settings: Settings,
    scenario: Scenario,
    ended: Ended,
    grading: Grading,
    blame: Attribution,
) -> TrialResult:
    """The trial's record; its answer scored where the sweep has a judge and the scenario an
    `answer` (never part of the trial's latency)."""
    result = _result(spec, settings, scenario, ended, grading, blame)
    if spec.judge is not None and scenario.answer is not None and result.outcome not in UNGRADED:
        # Judged after the clock stopped: judging is never part of the trial's latency.
        result.answer = await _scored(result, spec, scenario, settings)
    return result


def _result(
    spec: TrialSpec,
    settings: Settings,
    scenario: Scenario,
    ended: Ended,
    grading: Grading,
    blame: Attribution,
) -> TrialResult:
    state, verdict = ended.state, grading.verdict
    return TrialResult(
        trial_id=spec.trial_id,
        sweep_id=spec.sweep_id,
        model_id=spec.model.id,
        prompt_id=spec.prompt.id,
        scenario_id=scenario.id,
        tier=scenario.tier,
        expected_tools=scenario.expected_tools,
        repetition=spec.repetition,
        variant=spec.variant,
        toolset=spec.toolset_id,
        outcome=verdict.outcome,
        first_try=None if verdict.outcome in UNGRADED else verdict.first_try,
        recovered=blame.recovered,
        route=verdict.route,
        stop_reason=grading.stop,
        detail=verdict.detail,
        started_at=ended.started_at,
        finished_at=datetime.now(UTC),
        latency_s=ended.latency_s,
        first_token_s=state.first_token_s,
        model_s=state.measured_model_s,
        tokens=state.measured_tokens,
        turns=state.turns,
        final_answer=state.final_answer,
        transcript=state.transcript,
        tool_calls=state.calls,
        setup_calls=state.setup_calls,
        left_cassette=state.left_cassette,
        turn_results=recorded_turns(scenario, grading.turns),
        steps=blame.steps,
        elicitations=state.elicitations,
        state=grading.state,
        user_sim=ended.driver.user,
        failure_source=blame.source,
        agent_output=state.agent_output,
        provenance=provenance(spec, settings, ended.pins).model_copy(
            update={
                "server_tools": state.server_tools,
                "server_starts": state.server_starts,
                "selection_recall": state.selection_recall,
                "selections": state.selections,
                "selection_s": ended.selection_s,
                "tool_positions": state.tool_positions,
            }
        ),
    )


async def _scored(
    result: TrialResult, spec: TrialSpec, scenario: Scenario, settings: Settings
) -> AnswerScore | None:
    """The answer score, or None (logged) when scoring itself broke: the trial is recorded
    either way, and `farm rescore` can score it later."""
    assert spec.judge is not None
    try:
        trial = transcript_of(result, spec.seed)
        judge = judge_for(spec.judge, settings)
        return await score_answer(
            trial=trial,
            scenario=scenario,
            suite=spec.scenario.suite,
            toolset=spec.toolset,
            settings=spec.judge,
            judge=judge,
            repos=settings.data_dir / "repos",
            scoring=spec.judge.scoring_id("run"),
        )
    except Exception:  # a boundary: scoring must never cost the trial its record
        logger.exception("trial %s: answer scoring failed", spec.trial_id[:12])
        return None


def transcript_of(result: TrialResult, seed: int) -> Transcript:
    return Transcript(
        trial_id=result.trial_id,
        sweep_id=result.sweep_id,
        outcome=result.outcome,
        transcript=result.transcript,
        calls=result.tool_calls,
        latency_s=result.latency_s,
        tokens_prompt=result.tokens.prompt if result.tokens else None,
        tokens_completion=result.tokens.completion if result.tokens else None,
        final_answer=result.final_answer,
        seed=seed,
    )


def judge_for(judge: JudgeSettings, settings: Settings) -> Judge | None:
    if judge.model is None:
        return None
    return make_judge(
        judge.model,
        settings.model_cache_dir,
        judge.temperature,
        judge.max_tokens,
        threads=settings.local_threads,
    )
