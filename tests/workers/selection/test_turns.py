"""Selection runs on each user message: a scripted turn's, and a simulated user's; in a text
mode the system message then lists the new selection, through the real fixture servers."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import find_scenario, load_prompt
from mcp_farm.schema import Settings, TrialResult, TrialSpec, UserModel
from mcp_farm.schema.specs import SELECTION_VERSION, Selection
from mcp_farm.workers.model.toolspec import ToolSpec
from mcp_farm.workers.selection import selector as selector_module
from mcp_farm.workers.trial import execute_trial
from tests.helpers import ideal_script, scripted, trial

pytestmark = pytest.mark.integration


def _run(spec: TrialSpec, settings: Settings) -> TrialResult:
    return anyio.run(execute_trial, TrialSpec.model_validate(spec.model_dump()), settings)


def test_a_text_mode_is_shown_each_turns_selection_in_its_system_message(
    settings: Settings,
) -> None:
    talk = find_scenario("conversations", "conv.note-then-append")
    prompt = load_prompt("json").model_copy(update={"select": Selection(method="bm25", k=1)})
    spec = trial(talk, ideal_script(talk), suite="conversations", prompt=prompt)
    result = _run(spec.model_copy(update={"trial_id": ""}), settings)
    assert result.outcome == "pass", result.detail
    assert result.provenance.selection_recall == [1.0, 1.0]
    systems = [m.content or "" for m in result.transcript if m.role == "system"]
    # The first turn's list, then the second's: the model is told the tool it may call.
    assert len(systems) == 2
    assert "- create_note:" in systems[0] and "append_to_note" not in systems[0]
    assert "- append_to_note:" in systems[1] and "create_note" not in systems[1]


def test_each_message_of_a_simulated_user_selects_again(settings: Settings) -> None:
    dentist = find_scenario("usersim", "usersim.dentist-ask-time")
    agent: list[dict[str, Any]] = [
        {"answer": "What time does it start, and how long is it?"},
        {
            "call": {
                "name": "create_event",
                "arguments": {
                    "title": "Dentist (Dr Okafor)",
                    "start": "2026-03-12T15:00",
                    "end": "2026-03-12T15:45",
                },
            }
        },
        {"answer": "Done: Dentist on Thursday 12 March, 15:00 to 15:45."},
    ]
    user = [
        {"answer": "It starts at 15:00 and takes 45 minutes."},
        {"answer": "Thanks, that's all. ###STOP###"},
    ]
    prompt = load_prompt("native").model_copy(update={"select": Selection(method="bm25", k=50)})
    spec = trial(dentist, agent, suite="usersim", prompt=prompt, repetition=2)
    user_model = UserModel(model=scripted(user, "user-script"), temperature=0.0, seed=5)
    spec = TrialSpec.model_validate(
        spec.model_dump(exclude={"trial_id"}) | {"user": user_model.model_dump()}
    )
    result = anyio.run(execute_trial, spec, settings)
    assert result.outcome == "pass", result.detail
    assert result.user_sim is not None and result.user_sim.messages == 2
    # The opening and the user's reply each selected, each still expecting create_event;
    # the parting message reaches no agent and selects nothing.
    assert result.provenance.selection_recall == [1.0, 1.0]


class _Hung:
    """A ranker that never answers."""

    async def scores(self, query: str, tools: list[ToolSpec]) -> list[float]:
        await anyio.Event().wait()
        return []


def test_a_selector_that_times_out_ends_the_trial_as_an_infra_error_naming_it(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selector_module, "ranker_for", lambda how: _Hung())
    todo = find_scenario("basic", "fs.read-todo")
    prompt = load_prompt("native").model_copy(
        update={"select": Selection(method="bm25", k=2, timeout_s=0.2)}
    )
    result = _run(trial(todo, ideal_script(todo), prompt=prompt), settings)
    assert result.outcome == "infra_error"
    assert "tool selection (bm25) took more than 0.2 s" in (result.detail or "")
    assert result.tool_calls == []


def test_each_selection_is_recorded_with_its_ranks_and_its_time_kept_apart(
    settings: Settings,
) -> None:
    todo = find_scenario("basic", "fs.read-todo")
    prompt = load_prompt("native-bm25")
    assert prompt.select is not None and prompt.select.version == SELECTION_VERSION
    result = _run(trial(todo, ideal_script(todo), prompt=prompt), settings)
    assert result.outcome == "pass", result.detail
    pins = result.provenance
    assert pins.selections is not None and len(pins.selections) == 1
    (turn,) = pins.selections
    assert turn.recall == 1.0 and turn.ranks and turn.ranks[0] is not None
    assert turn.ranks[0] <= prompt.select.k
    assert pins.selection_s == pytest.approx(turn.seconds)
