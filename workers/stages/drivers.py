"""The converse stage's driver: who writes the user's side of a trial's conversation. The
scenario's own turns (a one-prompt scenario's one) or a simulated user (docs/simulated-user.md);
each converses, grades the calls and says whose mistake a failure was, so the trial runs either
without asking which."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from mcp_farm.schema import (
    FailureSource,
    Scenario,
    Settings,
    StopReason,
    TrialSpec,
    TurnResult,
    UserSimRecord,
)
from mcp_farm.workers.agent import agent_session
from mcp_farm.workers.conversation import run_conversation
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.grading.conversation import NOT_GRADED, grade_conversation
from mcp_farm.workers.grading.grade import Graded
from mcp_farm.workers.mcp.connections import Connected
from mcp_farm.workers.model.adapters import ModelClient, make_client
from mcp_farm.workers.session import SessionState
from mcp_farm.workers.usersim.cache import DbTurnCache
from mcp_farm.workers.usersim.grade import failure_source, grade_simulated, judge_stop
from mcp_farm.workers.usersim.loop import (
    UserSide,
    modelless_side,
    read_final_state,
    run_simulated,
    user_side,
)

Schemas = dict[str, dict[str, Any]]


class Driver(Protocol):
    """One kind of conversation: what the converse stage runs, and how its calls are graded."""

    @property
    def user(self) -> UserSimRecord | None:
        """The simulated user's record (its time is never the agent's); None without one."""
        ...

    async def converse(
        self,
        state: SessionState,
        spec: TrialSpec,
        scenario: Scenario,
        client: ModelClient,
        conn: Connected,
    ) -> None:
        """Run the conversation on `conn`, recording it in `state`."""
        ...

    def grade_calls(
        self, scenario: Scenario, state: SessionState, stop: StopReason, schemas: Schemas, why: str
    ) -> tuple[list[TurnResult], Graded]:
        """The turns as graded, and the verdict of the trial's calls (before its state's)."""
        ...

    def attribute(
        self, scenario: Scenario, verdict: Graded, state: SessionState, schemas: Schemas
    ) -> FailureSource | None:
        """Whose mistake a failure was, where the conversation can say; None where it cannot.
        FarmError: a pattern past its budget."""
        ...


def reply_limit_s(spec: TrialSpec) -> float | None:
    """The wall-clock bound on each reply of the model; None for a model in this process, which
    bounds its own replies by CPU time (model/guard.py)."""
    return spec.model.reply_limit_s if spec.model.reply_clock == "wall" else None


@dataclass(frozen=True)
class ScriptedTurns:
    """The scenario's turns, sent in order (workers/conversation.py); a one-prompt scenario is a
    conversation of one turn."""

    @property
    def user(self) -> UserSimRecord | None:
        return None

    async def converse(
        self,
        state: SessionState,
        spec: TrialSpec,
        scenario: Scenario,
        client: ModelClient,
        conn: Connected,
    ) -> None:
        prompt, seed, variant, limit_s = spec.prompt, spec.seed, spec.variant, reply_limit_s(spec)
        policy = spec.on_turn_failure or scenario.on_turn_failure
        async with agent_session(client, state, scenario, conn):
            await run_conversation(
                state, scenario, prompt, client, conn, seed, variant, limit_s, policy
            )

    def grade_calls(
        self, scenario: Scenario, state: SessionState, stop: StopReason, schemas: Schemas, why: str
    ) -> tuple[list[TurnResult], Graded]:
        turns = state.turn_results
        if turns and turns[-1].detail == NOT_GRADED:
            # The session ended inside this turn (a limit, a failure): it ended as the trial.
            turns[-1].stop_reason = stop
        return grade_conversation(
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

    def attribute(
        self, scenario: Scenario, verdict: Graded, state: SessionState, schemas: Schemas
    ) -> FailureSource | None:
        return None


SCRIPTED = ScriptedTurns()
"""The driver of every trial without a simulated user, and of one whose user could not be made."""


@dataclass(frozen=True)
class SimulatedUser:
    """A user model (or a frozen user, or none: the no-user arm) answering the agent, from the
    scenario's `user_sim` card (workers/usersim/)."""

    side: UserSide

    @property
    def user(self) -> UserSimRecord | None:
        return self.side.record

    async def converse(
        self,
        state: SessionState,
        spec: TrialSpec,
        scenario: Scenario,
        client: ModelClient,
        conn: Connected,
    ) -> None:
        prompt, seed, limit_s = spec.prompt, spec.seed, reply_limit_s(spec)
        await run_simulated(state, scenario, prompt, client, conn, seed, limit_s, self.side)
        await read_final_state(scenario, conn, self.side.record)

    def grade_calls(
        self, scenario: Scenario, state: SessionState, stop: StopReason, schemas: Schemas, why: str
    ) -> tuple[list[TurnResult], Graded]:
        record, calls, answer = self.side.record, state.calls, state.final_answer
        verdict = grade_simulated(
            scenario, record, calls, answer, state.transcript, stop, schemas, why
        )
        return state.turn_results, verdict

    def attribute(
        self, scenario: Scenario, verdict: Graded, state: SessionState, schemas: Schemas
    ) -> FailureSource | None:
        record, calls = self.side.record, state.calls
        judge_stop(scenario, verdict, record, calls, state.transcript, schemas)
        return failure_source(scenario, verdict, record, calls, schemas)


def driver_for(spec: TrialSpec, scenario: Scenario, settings: Settings) -> Driver:
    """The trial's driver: a simulated user for a scenario with a `user_sim` card (one without a
    model for a frozen user or the no-user arm), else the scenario's turns. A trial that needs a
    user model and names none cannot run (InfraError naming what to add)."""
    card = scenario.user_sim
    if card is None:
        return SCRIPTED
    if card.frozen is not None or spec.user_arm == "no_user":
        return SimulatedUser(modelless_side(card, spec.repetition))
    if spec.user is None:
        raise InfraError(
            f"scenario {scenario.id} talks to a simulated user, and the trial names no user "
            "model: give the sweep a `user_model:`"
        )
    client = make_client(spec.user.model, settings.model_cache_dir, settings.local_threads)
    # Crossed with user seeds, every repetition meets the same m users; else a new one each.
    offset = spec.repetition if spec.user_seed is None else spec.user_seed
    cache = DbTurnCache(settings.resolved_database_url())
    return SimulatedUser(user_side(client, spec.user, card, offset, cache))
