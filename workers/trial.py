"""Running one trial end to end: connect, converse, grade, and build the TrialResult."""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import anyio

from mcp_farm.scenarios import server_catalog, servers_for
from mcp_farm.schema import (
    UNGRADED,
    AnswerScore,
    FarmError,
    JudgeSettings,
    Scenario,
    ServerDef,
    Settings,
    StateVerdict,
    StepVerdict,
    StopReason,
    TrialResult,
    TrialSpec,
)
from mcp_farm.schema.specs import DISTRACTOR_SERVER
from mcp_farm.workers.agent import agent_session
from mcp_farm.workers.answer.judge import (
    Judge,
    make_judge,
)
from mcp_farm.workers.answer.scoring import (
    Transcript,
    score_answer,
)
from mcp_farm.workers.conversation import run_conversation
from mcp_farm.workers.errors import InfraError, harness_detail
from mcp_farm.workers.grading.conversation import (
    NOT_GRADED,
    grade_conversation,
    recorded_turns,
    recovered,
    trial_steps,
)
from mcp_farm.workers.grading.grade import Graded, scenario_of
from mcp_farm.workers.mcp.capture import Capture
from mcp_farm.workers.mcp.connections import connect
from mcp_farm.workers.mcp.pool import ServerPool
from mcp_farm.workers.mcp.probes import run_probes
from mcp_farm.workers.mcp.toollist import needs_distractors, shape_tools
from mcp_farm.workers.model.adapters import (
    ModelClient,
    make_client,
)
from mcp_farm.workers.model.encode import with_annotations
from mcp_farm.workers.node.provenance import provenance
from mcp_farm.workers.selection import Selector
from mcp_farm.workers.session import SessionState, run_setup
from mcp_farm.workers.state import CALLS_RIGHT, graded_by_state
from mcp_farm.workers.usersim.cache import DbTurnCache
from mcp_farm.workers.usersim.grade import failure_source, grade_simulated, judge_stop
from mcp_farm.workers.usersim.loop import (
    UserSide,
    modelless_side,
    read_final_state,
    run_simulated,
    user_side,
)

logger = logging.getLogger(__name__)


def _find(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first exception of `kind` in `exc`, looking inside exception groups."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _find(inner, kind)
            if found:
                return found
    return None


def attached(spec: TrialSpec, scenario: Scenario) -> list[ServerDef]:
    """The servers a trial attaches: its tool set's, or the scenario's own."""
    catalog = servers_for(spec.scenario.suite)
    names = spec.toolset.servers if spec.toolset else scenario.servers
    servers = [catalog[name] for name in names]
    if spec.tool_list is not None and needs_distractors(spec.tool_list):
        servers.append(server_catalog()[DISTRACTOR_SERVER])
    return servers


async def _converse(
    state: SessionState,
    spec: TrialSpec,
    scenario: Scenario,
    client: ModelClient,
    pool: ServerPool,
    capture: Capture | None = None,
    user: UserSide | None = None,
) -> dict[str, dict[str, Any]]:
    schemas: dict[str, dict[str, Any]] = {}
    servers = attached(spec, scenario)
    naming, chars = spec.prompt.tool_naming, spec.result_chars
    try:
        async with connect(servers, pool, naming, chars, capture, state.clock) as conn:
            try:
                # First: every touched server is listed again after its reset and the setup,
                # and the level, annotations and selection are made from that list.
                await run_setup(state, scenario.setup, conn, pool.start_timeout_s)
                if spec.tool_list is not None:
                    level, expected = spec.tool_list, scenario.expected_tools
                    state.tool_positions = await shape_tools(
                        conn, level, spec.seed, scenario.id, expected
                    )
                schemas.update({t.tool: t.input_schema for t in conn.tools.values()})
                state.destructive = frozenset(t.tool for t in conn.tools.values() if t.destructive)
                state.read_only = frozenset(t.tool for t in conn.tools.values() if t.read_only)
                if spec.prompt.show_annotations:
                    conn.tools.update({k: with_annotations(t) for k, t in conn.tools.items()})
                if spec.prompt.select is not None:
                    # After the annotations: the tools a selection shows carry them too.
                    conn.selector = Selector(
                        spec.prompt.select, dict(conn.tools), seed=spec.seed, clock=state.clock
                    )
                # A model in this process bounds its own replies by CPU time (model/guard.py).
                wall = spec.model.reply_clock == "wall"
                limit_s = spec.model.reply_limit_s if wall else None
                prompt, seed, variant = spec.prompt, spec.seed, spec.variant
                if user is not None:
                    await run_simulated(state, scenario, prompt, client, conn, seed, limit_s, user)
                    await read_final_state(scenario, conn, user.record)
                else:  # a conversation, or a one-prompt scenario as a conversation of one turn
                    policy = spec.on_turn_failure or scenario.on_turn_failure
                    async with agent_session(client, state, scenario, conn):
                        await run_conversation(
                            state, scenario, prompt, client, conn, seed, variant, limit_s, policy
                        )
                # What the world became, read where the model never sees it (docs/state.md).
                state.probes = await run_probes(scenario.state, conn, None)
            finally:
                # Tools listed mid-session (a tool-list change) are graded by their schemas too.
                schemas.update({t.tool: t.input_schema for t in conn.tools.values()})
                state.left_cassette = conn.left_cassette
                state.server_tools = conn.listed
                state.server_starts = conn.starts
                state.selection_recall = conn.selector.recalls if conn.selector else None
                state.selections = conn.selector.turns if conn.selector else None
                state.elicitations = conn.asked.exchanges
    finally:
        if capture is not None:
            # What was exchanged before a timeout or a failure was exchanged all the same.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(capture.save)
    return schemas


async def execute_trial(
    spec: TrialSpec, settings: Settings, pool: ServerPool | None = None
) -> TrialResult:
    """Run one trial on servers from `pool` (warm ones), or on servers started just for it."""
    if pool is not None:
        return await _execute(spec, settings, pool)
    root = settings.data_dir / "trials" / spec.trial_id[:16]
    try:
        async with anyio.create_task_group() as tg:
            own = ServerPool(tg, root, settings.server_start_timeout_s, fork=settings.server_fork)
            try:
                result = await _execute(spec, settings, own)
            finally:
                own.close()
        return result
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _execute(spec: TrialSpec, settings: Settings, pool: ServerPool) -> TrialResult:
    """Run one trial. Model failures become outcomes; infrastructure failures become infra_error;
    an exception from the farm's own code (a bug) becomes harness_error, with its traceback."""
    scenario = scenario_of(spec)  # with the sweep's overrides, as `farm rescore` grades it
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    state = SessionState()
    schemas: dict[str, dict[str, Any]] = {}
    problem = ""
    client: ModelClient | None = None
    user: UserSide | None = None
    try:
        client = make_client(spec.model, settings.model_cache_dir)
        user = _user_of(spec, scenario, settings)
        # The scenario's clock counts tools, servers and setup; the session stops it while the
        # model replies (each reply has the model's own limit).
        with anyio.CancelScope(deadline=anyio.current_time() + scenario.time_limit_s) as clock:
            state.clock = clock
            capture = Capture(settings.capture_dir) if settings.capture_dir else None
            schemas = await _converse(state, spec, scenario, client, pool, capture, user)
        if clock.cancelled_caught:
            state.stop_reason = "time_limit"
    except BaseException as exc:  # classify: timeout / infra / harness; the rest is re-raised
        if _find(exc, TimeoutError) and not _find(exc, InfraError):
            state.stop_reason = "time_limit"
        elif (infra := _find(exc, InfraError)) is not None:
            state.stop_reason, problem = "infra_error", str(infra)
        elif _find(exc, FarmError) is not None:  # deliberate: a model this worker cannot serve
            logger.exception("trial %s failed", spec.trial_id[:12])
            state.stop_reason, problem = "infra_error", f"{type(exc).__name__}: {exc}"
        elif isinstance(exc, Exception):
            logger.exception("trial %s hit a bug in the farm", spec.trial_id[:12])
            state.stop_reason, problem = "harness_error", harness_detail(exc)
        else:
            raise
    # The user model's time is the user's, and selection's is its own: never the agent's.
    selection_s = sum(t.seconds for t in state.selections) if state.selections is not None else None
    latency_s = time.perf_counter() - started - (user.record.seconds if user else 0.0)
    latency_s -= selection_s or 0.0
    stop: StopReason = state.stop_reason or "turn_limit"
    turns = state.turn_results
    recovery: bool | None = None
    state_verdict: StateVerdict | None = None
    try:
        why = problem or state.format_error or state.limit_detail or ""
        if user is not None:
            verdict = grade_simulated(
                scenario,
                user.record,
                state.calls,
                state.final_answer,
                state.transcript,
                stop,
                schemas,
                why,
            )
        else:
            if turns and turns[-1].detail == NOT_GRADED:
                # The session ended inside this turn (a limit, a failure): it ended as the trial.
                turns[-1].stop_reason = stop
            turns, verdict = grade_conversation(
                scenario,
                turns,
                state.calls,
                stop,
                schemas,
                why,
                state.destructive,
                state.elicitations,
                state.read_only,
            )
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
        logger.exception("trial %s: grading hit a bug in the farm", spec.trial_id[:12])
        stop, verdict = "harness_error", Graded("harness_error", harness_detail(exc))
    verdict = _after_grading(verdict, stop, problem, scenario, state)
    steps: list[StepVerdict] = []
    source = None
    if user is not None:
        try:
            record, calls = user.record, state.calls
            judge_stop(scenario, verdict, record, calls, state.transcript, schemas)
            source = failure_source(scenario, verdict, record, calls, schemas)
        except FarmError:  # a pattern past its budget: the verdict stands, the source unknown
            logger.warning("trial %s: failure source unknown", spec.trial_id[:12], exc_info=True)
    if verdict.outcome not in UNGRADED:
        try:
            recovery = recovered(scenario, state.calls, verdict.route, turns)
            steps = trial_steps(scenario, turns, state.calls, verdict.route, schemas)
        except FarmError:  # a pattern past its budget: the verdict stands, these unknown
            logger.warning("trial %s: recovery left unknown", spec.trial_id[:12], exc_info=True)
    result = TrialResult(
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
        recovered=recovery,
        route=verdict.route,
        stop_reason=stop,
        detail=verdict.detail,
        started_at=started_at,
        finished_at=datetime.now(UTC),
        latency_s=latency_s,
        first_token_s=state.first_token_s,
        model_s=state.model_s,
        tokens=state.tokens,
        turns=state.turns,
        final_answer=state.final_answer,
        transcript=state.transcript,
        tool_calls=state.calls,
        setup_calls=state.setup_calls,
        left_cassette=state.left_cassette,
        turn_results=recorded_turns(scenario, turns),
        steps=steps,
        elicitations=state.elicitations,
        state=state_verdict,
        user_sim=user.record if user else None,
        failure_source=source,
        provenance=provenance(spec, settings, client.pins if client else {}).model_copy(
            update={
                "server_tools": state.server_tools,
                "server_starts": state.server_starts,
                "selection_recall": state.selection_recall,
                "selections": state.selections,
                "selection_s": selection_s,
                "tool_positions": state.tool_positions,
            }
        ),
    )
    if spec.judge is not None and scenario.answer is not None and verdict.outcome not in UNGRADED:
        # Judged after the clock stopped: judging is never part of the trial's latency.
        result.answer = await _scored(result, spec, scenario, settings)
    return result


def _after_grading(
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


def _user_of(spec: TrialSpec, scenario: Scenario, settings: Settings) -> UserSide | None:
    """The trial's simulated user, for a scenario with a `user_sim` card (one without a model
    for a frozen user or the no-user arm); a trial that needs a user model and names none
    cannot run (InfraError naming what to add)."""
    card = scenario.user_sim
    if card is None:
        return None
    if card.frozen is not None or spec.user_arm == "no_user":
        return modelless_side(card, spec.repetition)
    if spec.user is None:
        raise InfraError(
            f"scenario {scenario.id} talks to a simulated user, and the trial names no user "
            "model: give the sweep a `user_model:`"
        )
    client = make_client(spec.user.model, settings.model_cache_dir)
    # Crossed with user seeds, every repetition meets the same m users; else a new one each.
    offset = spec.repetition if spec.user_seed is None else spec.user_seed
    cache = DbTurnCache(settings.resolved_database_url())
    return user_side(client, spec.user, card, offset, cache)


async def _scored(
    result: TrialResult, spec: TrialSpec, scenario: Scenario, settings: Settings
) -> AnswerScore | None:
    """The answer score, or None (logged) when scoring itself broke: the trial is recorded
    either way, and `farm rescore` can score it later."""
    assert spec.judge is not None
    try:
        return await score_answer(
            trial=transcript_of(result, spec.seed),
            scenario=scenario,
            suite=spec.scenario.suite,
            toolset=spec.toolset,
            settings=spec.judge,
            judge=judge_for(spec.judge, settings),
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
        tokens_prompt=result.tokens.prompt,
        tokens_completion=result.tokens.completion,
        final_answer=result.final_answer,
        seed=seed,
    )


def judge_for(judge: JudgeSettings, settings: Settings) -> Judge | None:
    if judge.model is None:
        return None
    return make_judge(judge.model, settings.model_cache_dir, judge.temperature, judge.max_tokens)
