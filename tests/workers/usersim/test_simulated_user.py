"""A simulated user played by the scripted adapter, through the real fixture servers: a good
user and an ideal agent pass every bundled simulated-user scenario; a user that invents a fact
is caught and, when the agent's first mistake answered it, blamed; the user's tokens, time
and identity are kept apart from the agent's; the user sees only what the agent said to it."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import find_scenario, load_suite
from mcp_farm.scenarios.usersim import guideline
from mcp_farm.schema import (
    ModelTarget,
    PromptConfig,
    Scenario,
    Settings,
    TrialResult,
    TrialSpec,
    UserModel,
)
from mcp_farm.workers.model import adapters
from mcp_farm.workers.model.scripted import ScriptedClient
from mcp_farm.workers.trial import execute_trial
from tests.fake_openai import Behaviour, fake_openai
from tests.helpers import scripted, trial

pytestmark = pytest.mark.integration

STOP = {"answer": "Thanks, that's all. ###STOP###"}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"call": {"name": name, "arguments": arguments}}


def say(text: str) -> dict[str, Any]:
    return {"answer": text}


IDEAL: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "usersim.groceries-ask-item": (
        [
            say("Sure, what would you like me to add?"),
            call("append_to_note", note_id="groceries", text="- oat milk"),
            say("Added oat milk to your Groceries note."),
        ],
        [say("Oat milk, please."), STOP],
    ),
    "usersim.dentist-ask-time": (
        [
            say("What time does it start, and how long is it?"),
            call(
                "create_event",
                title="Dentist (Dr Okafor)",
                start="2026-03-12T15:00",
                end="2026-03-12T15:45",
            ),
            say("Done: Dentist on Thursday 12 March, 15:00 to 15:45."),
        ],
        [say("It starts at 15:00 and takes 45 minutes."), STOP],
    ),
    "usersim.landlord-ask-address": (
        [
            say("Happy to. What is your landlord's email address?"),
            call(
                "send_email",
                to="joana@flores-rentals.example",
                subject="Heating fixed",
                body="Hi Joana, the heating is fixed now.",
            ),
            say("Sent: I told Joana the heating is fixed."),
        ],
        [say("It's joana@flores-rentals.example."), STOP],
    ),
    "usersim.cancel-yoga": (
        [
            say("Shall I cancel Yoga at 18:30 tonight?"),
            call("cancel_event", event_id="evt-1006"),
            say("Cancelled your yoga tonight."),
        ],
        [say("Yes, please cancel it."), STOP],
    ),
    "usersim.reminder-ask-day": (
        [
            say("Sure. On which day should I remind you?"),
            call("add_reminder", text="Renew passport", due="2026-03-20"),
            say("Done: a reminder to renew your passport on 2026-03-20."),
        ],
        [say("On 2026-03-20, please."), STOP],
    ),
    "usersim.tick-off-water-bill": (
        [
            call("list_reminders"),
            say("I found r2, Pay the water bill, due 2026-03-12. Shall I mark it done?"),
            call("complete_reminder", reminder_id="r2"),
            say("Ticked off: Pay the water bill."),
        ],
        [say("Yes, r2 is the one."), STOP],
    ),
    "usersim.book-club-note": (
        [
            say("Happy to. When is the next meeting, and which book are you reading?"),
            call(
                "create_note",
                title="Book club",
                content="Next meeting: 2026-03-26. Book: Piranesi.",
            ),
            say("Created the note Book club with 2026-03-26 and Piranesi."),
        ],
        [say("We meet on 2026-03-26 and the book is Piranesi."), STOP],
    ),
    "usersim.invoice-to-accountant": (
        [
            say("Of course. Which invoice was it, and how much did you pay?"),
            call(
                "send_email",
                to="marta@ledgerwise.example",
                subject="Invoice INV-2291 paid",
                body="Hi Marta, I have paid invoice INV-2291 (1,450.00 EUR). Best, Sam",
            ),
            say("Sent: Marta knows INV-2291 is paid."),
        ],
        [say("It was INV-2291, and I paid 1,450.00 EUR."), STOP],
    ),
    "usersim.haircut-ask-day": (
        [
            say("Sure. On which day and at what time is it, and how long does it take?"),
            call(
                "create_event",
                title="Haircut (Barbearia Oliveira)",
                start="2026-03-14T10:00",
                end="2026-03-14T10:30",
            ),
            say("Added: Haircut on 2026-03-14, 10:00 to 10:30."),
        ],
        [say("It's on 2026-03-14 at 10:00 and takes 30 minutes."), STOP],
    ),
    "usersim.reply-priya-later": (
        [
            say("I can do that. What time would work for you?"),
            call(
                "reply_to_email",
                email_id="msg-1042",
                body="Hi Priya, I'd love to come! Could we make it 20:30?",
            ),
            say("Replied to Priya, proposing 20:30."),
        ],
        [say("20:30 would work for me."), STOP],
    ),
}


def test_every_bundled_simulated_user_scenario_has_an_ideal_conversation_here() -> None:
    assert sorted(IDEAL) == sorted(s.id for s in load_suite("usersim").scenarios)


def first_calls_of(agent: list[dict[str, Any]]) -> list[int]:
    """Per user message, how many calls the ideal agent had made before it answered it."""
    made, found = 0, [0]
    for step in agent[:-1]:
        if "call" in step:
            made += 1
        else:
            found.append(made)
    return found


def user_model(script: list[dict[str, Any]], seed: int = 5) -> UserModel:
    return UserModel(model=scripted(script, "user-script"), temperature=0.0, seed=seed)


def run(
    scenario: Scenario, agent: list[dict[str, Any]], user: list[dict[str, Any]], settings: Settings
) -> TrialResult:
    spec = trial(scenario, agent, suite="usersim", repetition=2)
    spec = TrialSpec.model_validate(
        spec.model_dump(exclude={"trial_id"}) | {"user": user_model(user).model_dump()}
    )
    return anyio.run(execute_trial, spec, settings)


@pytest.mark.parametrize("scenario_id", sorted(IDEAL))
def test_a_good_user_and_an_ideal_agent_pass_with_no_user_error(
    scenario_id: str, settings: Settings
) -> None:
    agent, user = IDEAL[scenario_id]
    result = run(find_scenario("usersim", scenario_id), agent, user, settings)
    assert (result.outcome, result.detail) == ("pass", "")
    assert result.failure_source == "none"
    assert result.user_sim is not None
    assert result.user_sim.errors == []
    assert (result.user_sim.ended, result.user_sim.messages) == ("user_stop", 2)
    assert result.user_sim.first_calls == first_calls_of(agent)
    assert all(c.ok for c in result.user_sim.state_calls)


DENTIST = find_scenario("usersim", "usersim.dentist-ask-time")
AT_FOUR = [
    say("What time does it start, and how long is it?"),
    call("create_event", title="Dentist", start="2026-03-12T16:00", end="2026-03-12T16:45"),
    say("Done: Dentist on Thursday 12 March, 16:00 to 16:45."),
]


def test_a_user_that_invents_a_time_is_caught_and_blamed_for_the_failure_it_led_to(
    settings: Settings,
) -> None:
    user = [say("It starts at 16:00 and takes 45 minutes."), STOP]
    result = run(DENTIST, AT_FOUR, user, settings)
    assert result.outcome == "wrong_params"
    assert result.user_sim is not None
    [error] = result.user_sim.errors
    assert (error.message, error.facts) == (1, ["16:00"])
    assert error.said == "It starts at 16:00 and takes 45 minutes."
    assert result.failure_source == "user"


def test_the_same_wrong_call_after_a_truthful_user_is_the_agents_failure(
    settings: Settings,
) -> None:
    user = [say("It starts at 15:00 and takes 45 minutes."), STOP]
    result = run(DENTIST, AT_FOUR, user, settings)
    assert result.outcome == "wrong_params"
    assert result.user_sim is not None and result.user_sim.errors == []
    assert result.failure_source == "agent"


def test_a_user_error_after_the_agents_first_mistake_does_not_take_the_blame(
    settings: Settings,
) -> None:
    # The agent guesses a time before asking; the user's invention comes after it.
    agent = [AT_FOUR[1], say("Booked for 16:00. Anything else?"), say("OK.")]
    user = [say("Room B-12, 2nd floor."), STOP]
    result = run(DENTIST, agent, user, settings)
    assert result.outcome == "wrong_params"
    assert result.user_sim is not None
    assert [e.facts for e in result.user_sim.errors] == [["B-12", "2"]]
    assert result.failure_source == "agent"


def test_a_missed_milestone_fails_the_conversation_and_a_user_may_stop_early(
    settings: Settings,
) -> None:
    groceries = find_scenario("usersim", "usersim.groceries-ask-item")
    agent = [call("append_to_note", note_id="groceries", text="- oat milk"), say("Added it.")]
    result = run(groceries, agent, [STOP], settings)
    assert (result.outcome, result.detail) == (
        "output_mismatch",
        "the agent never asked about /what|which|item/",
    )
    yoga = find_scenario("usersim", "usersim.cancel-yoga")
    agent = [say("Shall I cancel it?"), say("I have cancelled it.")]
    result = run(yoga, agent, [say("Yes.")], settings)
    assert result.outcome == "no_tool_call"
    assert result.failure_source == "agent"
    assert result.user_sim is not None
    # The user's script ran out: an empty message ends the conversation as the user's stop.
    assert (result.user_sim.ended, result.user_sim.messages) == ("user_stop", 2)


def test_user_tokens_and_identity_are_recorded_apart_from_the_agents(settings: Settings) -> None:
    agent, user = IDEAL["usersim.groceries-ask-item"]
    result = run(find_scenario("usersim", "usersim.groceries-ask-item"), agent, user, settings)
    assert result.user_sim is not None
    # The scripted adapter counts 8 completion tokens a reply: 3 agent replies, 2 user ones.
    assert result.tokens.completion == 3 * 8
    assert result.user_sim.tokens.completion == 2 * 8
    assert result.turns == 3
    identity = result.user_sim.identity
    assert identity.model_id == "user-script"
    assert (identity.temperature, identity.seed, identity.guideline) == (0.0, 5 + 2, "v1")
    assert identity.pins == {"adapter": "scripted"}
    assert identity.model_key == scripted(user, "user-script").key()


def test_an_openai_compatible_endpoint_plays_the_user_and_its_tokens_are_the_users(
    settings: Settings,
) -> None:
    groceries = find_scenario("usersim", "usersim.groceries-ask-item")
    agent, _user = IDEAL[groceries.id]
    behaviour = Behaviour(models=["user-llm"], replies=["Oat milk, please.", STOP["answer"]])
    with fake_openai(behaviour) as endpoint:
        target = ModelTarget(
            id="endpoint-user", adapter="openai", model="user-llm", endpoint=endpoint.url
        )
        user = UserModel(model=target, temperature=0.7, seed=5)
        spec = trial(groceries, agent, suite="usersim", repetition=2)
        spec = TrialSpec.model_validate(
            spec.model_dump(exclude={"trial_id"}) | {"user": user.model_dump()}
        )
        result = anyio.run(execute_trial, spec, settings)
    assert (result.outcome, result.failure_source) == ("pass", "none")
    assert result.user_sim is not None
    identity = result.user_sim.identity
    # The user's identity records the endpoint and the model it serves.
    assert identity.model_id == "endpoint-user" and identity.model_key == target.key()
    assert identity.pins == {"adapter": "openai", "endpoint": endpoint.url, "model": "user-llm"}
    assert (identity.temperature, identity.seed) == (0.7, 5 + 2)
    # The endpoint counts 12 prompt and 7 completion tokens a reply: two user replies, counted
    # on the user; the scripted agent's 3 replies of 8 completion tokens each are the trial's.
    assert (result.user_sim.tokens.prompt, result.user_sim.tokens.completion) == (24, 14)
    assert result.tokens.completion == 3 * 8
    assert len(behaviour.seen_systems) == 2
    assert all(system.startswith(guideline()) for system in behaviour.seen_systems)
    assert [m.content for m in result.transcript if m.role == "user"][1] == "Oat milk, please."


def test_the_user_sees_only_what_the_agent_said_to_it(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    class Spy(ScriptedClient):
        async def complete(self, messages, tools, prompt, seed):  # type: ignore[no-untyped-def]
            if prompt.id == "simulated-user":
                seen.append("\n".join(m.content for m in messages))
            return await super().complete(messages, tools, prompt, seed)

    def spy(target: ModelTarget, _cache: Any, _threads: int) -> Spy:
        return Spy(target)

    monkeypatch.setitem(adapters.ADAPTERS, "scripted", spy)
    agent, user = IDEAL["usersim.groceries-ask-item"]
    result = run(find_scenario("usersim", "usersim.groceries-ask-item"), agent, user, settings)
    assert result.outcome == "pass"
    assert len(seen) == 2
    assert seen[0].startswith(guideline())
    assert "Sure, what would you like me to add?" in seen[0]
    assert "Added oat milk to your Groceries note." in seen[1]
    tool_result = result.tool_calls[0].result_text
    system = PromptConfig.model_validate(trial(DENTIST, []).prompt).system_prompt
    assert tool_result and all(tool_result not in text for text in seen)
    assert all(system[:60] not in text for text in seen)


def test_a_trial_without_a_user_model_is_an_infrastructure_error_naming_it(
    settings: Settings,
) -> None:
    result = anyio.run(execute_trial, trial(DENTIST, AT_FOUR, suite="usersim"), settings)
    assert result.outcome == "infra_error"
    assert "user_model" in result.detail
    assert result.user_sim is None and result.failure_source is None
