"""Reproducible users and the no-user arm, with the scripted user adapter through the real
fixture servers: at temperature 0 a repeated conversation meets the cached user at no cost;
above it the user model is asked every time; the no-user arm puts every fact in the opening
and asks no user."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import find_scenario
from mcp_farm.scenarios.usersim import no_user_opening
from mcp_farm.schema import (
    NO_USER_SUFFIX,
    PromptConfig,
    Scenario,
    Settings,
    TrialResult,
    TrialSpec,
    UserIdentity,
    UserModel,
)
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.workers.trial import execute_trial
from mcp_farm.workers.usersim.cache import turn_key
from tests.helpers import run_sweep_embedded, scripted, trial
from tests.workers.usersim.test_simulated_user import IDEAL, call, say

pytestmark = pytest.mark.integration

GROCERIES = find_scenario("usersim", "usersim.groceries-ask-item")
DENTIST = find_scenario("usersim", "usersim.dentist-ask-time")


def spec_for(
    scenario: Scenario,
    agent: list[dict[str, Any]],
    user: list[dict[str, Any]] | None,
    temperature: float = 0.0,
    **extra: Any,
) -> TrialSpec:
    base = trial(scenario, agent, suite="usersim", repetition=1).model_dump(exclude={"trial_id"})
    if user is not None:
        model = UserModel(model=scripted(user, "user-script"), temperature=temperature, seed=3)
        base["user"] = model.model_dump()
    return TrialSpec.model_validate(base | extra)


def run_twice(spec: TrialSpec, settings: Settings) -> tuple[TrialResult, TrialResult]:
    init_db(make_engine(settings.resolved_database_url()))
    return anyio.run(execute_trial, spec, settings), anyio.run(execute_trial, spec, settings)


def test_a_repeated_conversation_at_temperature_zero_meets_the_cached_user_at_no_cost(
    settings: Settings,
) -> None:
    agent, user = IDEAL[GROCERIES.id]
    first, second = run_twice(spec_for(GROCERIES, agent, user), settings)
    assert (first.outcome, second.outcome) == ("pass", "pass")
    assert first.user_sim is not None and second.user_sim is not None
    assert (first.user_sim.cached, first.user_sim.tokens.completion) == (0, 2 * 8)
    # Both user turns came from the cache: no user tokens; the reads are the user's time.
    assert (second.user_sim.cached, second.user_sim.tokens.completion) == (2, 0)
    assert second.user_sim.seconds > 0.0
    assert [m.content for m in second.transcript] == [m.content for m in first.transcript]
    assert second.user_sim.ended == "user_stop"


class FakeClock:
    """A perf_counter that moves only when the slow cache says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now


class SlowCache:
    """A cache of user turns whose every read takes 2 s and every write 3 s of the fake clock."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock, self.kept = clock, dict[str, str]()

    async def get(self, key: str) -> str | None:
        self.clock.now += 2.0
        return self.kept.get(key)

    async def put(self, key: str, text: str, model_id: str) -> None:
        self.clock.now += 3.0
        self.kept[key] = text


def test_the_cache_of_user_turns_is_the_users_time_never_the_agents_latency(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_farm.workers import trial as trial_module
    from mcp_farm.workers.stages import drivers
    from mcp_farm.workers.usersim import loop

    # The trial's latency and the user's seconds both read this clock, and only the cache
    # moves it: whatever of the cache's time is not the user's shows as the agent's latency.
    clock = FakeClock()
    cache = SlowCache(clock)
    monkeypatch.setattr(trial_module, "time", clock)
    monkeypatch.setattr(loop, "time", clock)
    monkeypatch.setattr(drivers, "DbTurnCache", lambda _url: cache)
    agent, user = IDEAL[GROCERIES.id]
    spec = spec_for(GROCERIES, agent, user)
    first, second = (anyio.run(execute_trial, spec, settings) for _ in range(2))
    assert first.user_sim is not None and second.user_sim is not None
    # Two user turns: first two misses and two writes, then two hits.
    assert (first.user_sim.cached, second.user_sim.cached) == (0, 2)
    assert (first.user_sim.seconds, second.user_sim.seconds) == (2 * 2.0 + 2 * 3.0, 2 * 2.0)
    assert (first.latency_s, second.latency_s) == (0.0, 0.0)
    assert first.outcome == second.outcome == "pass"


def test_above_temperature_zero_the_user_model_is_asked_every_time(settings: Settings) -> None:
    agent, user = IDEAL[GROCERIES.id]
    first, second = run_twice(spec_for(GROCERIES, agent, user, temperature=0.7), settings)
    assert first.user_sim is not None and second.user_sim is not None
    assert (second.user_sim.cached, second.user_sim.tokens.completion) == (0, 2 * 8)


def test_the_cache_key_holds_the_seed_only_above_temperature_zero() -> None:
    settings = UserModel(model=scripted([], "u"))

    def key(temperature: float, seed: int, visible: str = "You: hi") -> str:
        identity = UserIdentity(
            model_id="u", model_key="k", temperature=temperature, seed=seed, guideline="v1"
        )
        return turn_key(identity, settings, "system", visible)

    assert key(0.0, 1) == key(0.0, 2)
    assert key(0.5, 1) != key(0.5, 2)
    assert key(0.0, 1) != key(0.0, 1, "You: hello")
    assert key(0.0, 1) != key(0.5, 1)


def test_the_no_user_arm_puts_every_fact_in_the_opening_and_asks_no_user(
    settings: Settings,
) -> None:
    agent = [
        call(
            "create_event",
            title="Dentist (Dr Okafor)",
            start="2026-03-12T15:00",
            end="2026-03-12T15:45",
        ),
        say("Done: Dentist on Thursday 12 March, 15:00 to 15:45."),
    ]
    prompt = PromptConfig.model_validate(trial(DENTIST, []).prompt)
    prompt = prompt.model_copy(update={"id": prompt.id + NO_USER_SUFFIX})
    spec = spec_for(DENTIST, agent, None, user_arm="no_user", prompt=prompt.model_dump())
    result = anyio.run(execute_trial, spec, settings)
    # No question was needed, so the scenario's `must_ask` does not hold in this arm.
    assert (result.outcome, result.detail) == ("pass", "")
    assert result.prompt_id == "native-nouser"
    opening = [m.content for m in result.transcript if m.role == "user"]
    assert opening == [no_user_opening(DENTIST.user_sim)]  # type: ignore[arg-type]
    assert "- start time: 15:00\n- length: 45 minutes" in opening[0]
    assert opening[0].startswith(DENTIST.user_sim.opening)  # type: ignore[union-attr]
    assert result.user_sim is not None
    assert (result.user_sim.identity.model_id, result.user_sim.messages) == ("no-user", 1)
    assert result.user_sim.tokens.completion == 0
    assert result.failure_source == "none"


def test_a_no_user_sweep_is_rescored_as_it_ran(settings: Settings) -> None:
    from sqlalchemy import text

    from mcp_farm.scheduler.submission.queries import record_scoring
    from mcp_farm.schema import JudgeSettings, ScenarioSelection, SweepSpec, load_task

    agent = [
        call("create_event", title="Dentist", start="2026-03-12T15:00", end="2026-03-12T15:45"),
        say("Done."),
    ]
    sweep = SweepSpec(
        name="nouser",
        models=[scripted(agent, "a")],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=["usersim"], ids=[DENTIST.id]),
        repetitions=1,
        user_arms=["no_user"],
    )
    engine, plan = run_sweep_embedded(sweep, settings)
    with engine.begin() as conn:
        [(trial_id, prompt_id, outcome)] = conn.execute(
            text("select trial_id, prompt_id, outcome from trial where sweep_id = :s"),
            {"s": plan.sweep_id},
        ).all()
        scoring = record_scoring(conn, plan.sweep_id, JudgeSettings(), "rescore", "test")
    assert (prompt_id, outcome) == ("native-nouser", "pass")
    summary = load_task("farm.rescore_trial")(
        {"trial_id": trial_id, "scoring_id": scoring, "judge": JudgeSettings().model_dump()},
        settings,
    )
    assert summary.outcome == "pass"
