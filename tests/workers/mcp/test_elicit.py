"""The scripted user's answers to elicitation requests, on the SDK's own request types: the
first matching entry answers, anything unmatched (or with no trial holding the session) is
declined, and every exchange is recorded."""

from __future__ import annotations

from typing import Any

import anyio
from mcp.types import ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult

from mcp_farm.schema import ElicitAnswer
from mcp_farm.workers.mcp.elicit import Asked, ElicitHolder

HEADCOUNT: dict[str, Any] = {
    "type": "object",
    "properties": {"people": {"type": "integer"}},
    "required": ["people"],
}


def _ask(holder: ElicitHolder, params: Any) -> Any:
    async def go() -> Any:
        return await holder(None, params)  # type: ignore[arg-type]

    return anyio.run(go)


def _form(message: str) -> ElicitRequestFormParams:
    return ElicitRequestFormParams(message=message, requested_schema=HEADCOUNT)


def test_the_first_entry_that_matches_message_and_field_answers() -> None:
    script = [
        ElicitAnswer(message="delete", action="decline"),
        ElicitAnswer(field="people", message="harbor", action="cancel"),
        ElicitAnswer(field="people", action="accept", content={"people": 4}),
    ]
    asked = Asked(script=script, turn=2, call=7)
    holder = ElicitHolder("office", asked)
    assert _ask(holder, _form("How many people in Attic?")) == ElicitResult(
        action="accept", content={"people": 4}
    )
    assert _ask(holder, _form("How many people in HARBOR?")).action == "cancel"
    assert [(e.turn, e.call, e.action, e.scripted) for e in asked.exchanges] == [
        (2, 7, "accept", True),
        (2, 7, "cancel", True),
    ]


def test_an_unmatched_or_url_request_is_declined_and_noted_as_unscripted() -> None:
    asked = Asked(script=[ElicitAnswer(field="confirm", action="accept", content={"x": 1})])
    holder = ElicitHolder("office", asked)
    assert _ask(holder, _form("How many people?")).action == "decline"
    url = ElicitRequestURLParams(message="Sign in", url="https://example.test", elicitation_id="1")
    assert _ask(holder, url).action == "decline"
    assert [(e.mode, e.scripted) for e in asked.exchanges] == [("form", False), ("url", False)]


def test_a_session_no_trial_holds_declines_without_recording() -> None:
    assert _ask(ElicitHolder("office"), _form("How many people?")).action == "decline"


def test_content_that_does_not_fit_the_schema_is_refused_and_named_as_the_scenarios_error() -> None:
    wrong = ElicitAnswer(field="people", action="accept", content={"people": "many"})
    asked = Asked(script=[wrong])
    answer = _ask(ElicitHolder("office", asked), _form("How many people?"))
    assert not isinstance(answer, ElicitResult)
    assert "does not fit the requested schema" in asked.problem
    # Issue 36, item 23: the message names the entry and where it is written.
    assert "the `elicit` entry {field: people, action: accept} (elicit[0])" in asked.problem
    turned = Asked(script=[wrong], turn=2, turn_entries=1)
    _ask(ElicitHolder("office", turned), _form("How many people?"))
    assert "(turns[2].elicit[0])" in turned.problem
