"""Servers that ask the user (MCP elicitation), through the real office server over stdio and
streamable HTTP and the SDK's own elicitation/create: the scripted user answers, every
exchange is kept on the trial, and calling a tool again after a refusal is forbidden_call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError
from rich.console import Console
from sqlalchemy import text

from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.report.html.page import _transcript
from mcp_farm.scheduler.submission.queries import record_scoring
from mcp_farm.scheduler.view.queries import trial_record
from mcp_farm.scheduler.view.terminal import print_trial
from mcp_farm.scheduler.view.transcript import entries
from mcp_farm.scheduler.view.trial_page import trial_page
from mcp_farm.schema import (
    ElicitAnswer,
    Elicitation,
    JudgeSettings,
    Scenario,
    ScenarioSelection,
    Settings,
    SweepSpec,
    TrialResult,
    load_task,
)
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.workers.node.runtime import Runtime
from mcp_farm.workers.store.results import save_trial
from tests.helpers import (
    ideal_call_problems,
    ideal_script,
    run_sweep_embedded,
    scripted,
    served_over_http,
    trial,
)

pytestmark = pytest.mark.integration

SERVER = "mcp_farm.scenarios.servers.office"
SUITE = load_suite("conversations")
ASKING = [s for s in SUITE.scenarios if "elicitation" in s.tags]
BY_ID = {s.id: s for s in ASKING}
# The turn whose call the user refuses (declines, cancels, or leaves unscripted).
REFUSED = {
    "conv.office-delete-declined": 1,
    "conv.office-book-room-cancelled": 0,
    "conv.office-delete-unscripted": 0,
}


def _script(scenario: Scenario, i: int, instead: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ideal agent, with turn i's replies replaced by `instead`."""
    script: list[dict[str, Any]] = []
    for k in range(len(scenario.turns)):
        script += instead if k == i else ideal_script(scenario.turn_scenario(k))
    return script


def _run(
    warm: tuple[Runtime, Settings],
    scenario: Scenario,
    script: list[dict[str, Any]],
    suite: str = "conversations",
) -> TrialResult:
    runtime, settings = warm
    return runtime.run(trial(scenario, script, suite=suite), settings)


def _suite(folder: Path, body: str, server: str = "") -> Scenario:
    """The one scenario of a suite file written for a test."""
    path = folder / "asks.yaml"
    path.write_text(f"suite: asks\n{server}scenarios:\n{body}")
    return load_suite(str(path)).scenarios[0]


def test_the_suite_has_five_elicitation_conversations_covering_every_answer() -> None:
    assert len(ASKING) >= 5
    actions = {
        e.action for s in ASKING for e in [*s.elicit, *(e for t in s.turns for e in t.elicit)]
    }
    assert actions == {"accept", "decline", "cancel"}
    assert any(not s.elicit and not any(t.elicit for t in s.turns) for s in ASKING)


@pytest.mark.parametrize("scenario", ASKING, ids=lambda s: s.id)
def test_each_request_is_answered_from_the_script_and_kept_on_the_trial(
    scenario: Scenario, warm: tuple[Runtime, Settings]
) -> None:
    result = _run(warm, scenario, ideal_script(scenario))
    assert result.outcome == "pass", result.detail
    [asked] = result.elicitations
    turn = result.turn_results[asked.turn]
    assert asked.server == "office"
    assert asked.call == turn.first_call
    assert asked.requested_schema["type"] == "object"
    unscripted = scenario.id == "conv.office-delete-unscripted"
    assert asked.scripted is not unscripted
    assert (asked.action == "accept") is (scenario.id not in REFUSED)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_calling_the_tool_again_after_the_user_refused_is_a_forbidden_call(
    name: str, warm: tuple[Runtime, Settings]
) -> None:
    scenario, i = BY_ID[name], REFUSED[name]
    calls = [item for item in ideal_script(scenario.turn_scenario(i)) if "call" in item]
    again = [*calls, *calls, {"answer": "Done."}]
    result = _run(warm, scenario, _script(scenario, i, again))
    assert result.outcome == "forbidden_call", result.detail
    assert result.turn_results[i].outcome == "forbidden_call"
    assert "again after the user" in result.turn_results[i].detail


def test_inventing_the_number_the_user_would_not_give_is_a_forbidden_call(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = BY_ID["conv.office-book-room-cancelled"]
    made_up = {"call": {"name": "book_room", "arguments": {"room": "Harbor", "date": "2026-03-13"}}}
    guess = {"room": "Harbor", "date": "2026-03-13", "people": 6}
    script = _script(
        scenario,
        0,
        [made_up, {"call": {"name": "book_room", "arguments": guess}}, {"answer": "Ok"}],
    )
    result = _run(warm, scenario, script)
    assert result.turn_results[0].outcome == "forbidden_call", result.detail
    assert "people=6" in result.turn_results[0].detail


def test_an_accepted_elicitation_is_the_confirmation_a_destructive_call_needs(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    confirmed = BY_ID["conv.office-delete-confirmed"]
    assert confirmed.confirm_destructive
    assert _run(warm, confirmed, ideal_script(confirmed)).outcome == "pass"
    unconfirmed = _suite(
        tmp_path,
        """\
  - id: asks.delete-unconfirmed
    version: 1
    tier: simple
    servers: [office]
    confirm_destructive: true
    turns:
      - user: Delete old-logo.png.
        expect:
          - tool: delete_file
            params: {name: old-logo.png}
            example: {name: old-logo.png}
      - user: Thanks.
        expect: none
""",
    )
    result = _run(warm, unconfirmed, ideal_script(unconfirmed), str(tmp_path / "asks.yaml"))
    assert result.outcome == "forbidden_call", result.detail
    assert "before the user confirmed" in result.detail
    assert [e.scripted for e in result.elicitations] == [False]


def test_a_one_prompt_scenario_answers_from_its_own_elicit(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    scenario = _suite(
        tmp_path,
        """\
  - id: asks.book-for-five
    version: 1
    tier: simple
    prompt: Book Harbor for 2026-03-20.
    servers: [office]
    elicit:
      - {field: people, action: accept, content: {people: 5}}
    expect:
      - tool: book_room
        params: {room: Harbor, date: "2026-03-20"}
        example: {room: Harbor, date: "2026-03-20"}
    final_answer: "5 people"
    example_answer: Booked Harbor on 2026-03-20 for 5 people.
""",
    )
    result = _run(warm, scenario, ideal_script(scenario), str(tmp_path / "asks.yaml"))
    assert result.outcome == "pass", result.detail
    assert result.tool_calls[0].result_text == "Booked Harbor on 2026-03-20 for 5 people."
    assert [(e.turn, e.call, e.action) for e in result.elicitations] == [(0, 0, "accept")]


def test_an_answer_that_does_not_fit_the_requested_schema_is_an_infra_error(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    scenario = _suite(
        tmp_path,
        """\
  - id: asks.wrong-content
    version: 1
    tier: simple
    prompt: Book the Attic for 2026-03-20.
    servers: [office]
    elicit:
      - {message: "how many", action: accept, content: {people: lots}}
    expect:
      - tool: book_room
        example: {room: Attic, date: "2026-03-20"}
""",
    )
    result = _run(warm, scenario, ideal_script(scenario), str(tmp_path / "asks.yaml"))
    assert result.outcome == "infra_error"
    assert "does not fit the requested schema" in result.detail


@pytest.mark.parametrize(
    ("entry", "named"),
    [
        ({"action": "decline"}, "needs `message` or `field`"),
        ({"field": "people", "action": "accept"}, "content: `action: accept` needs"),
        ({"field": "confirm", "action": "cancel", "content": {"x": 1}}, "content: `action"),
        ({"message": "(", "action": "decline"}, "message"),
        ({"field": "people", "action": "maybe"}, "action"),
    ],
)
def test_an_elicit_entry_that_cannot_answer_is_a_load_error_naming_the_field(
    entry: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValidationError, match=named):
        ElicitAnswer.model_validate(entry)


@pytest.fixture(scope="module")
def office_url() -> Iterator[str]:
    """The office server over streamable HTTP, started by hand: the farm only connects."""
    with served_over_http(SERVER, "office") as (url, _proc):
        yield url


@pytest.mark.parametrize("mistake", [False, True])
def test_over_streamable_http_the_scripted_user_answers_and_a_decline_is_held(
    mistake: bool, tmp_path: Path, office_url: str, warm: tuple[Runtime, Settings]
) -> None:
    text = Path("scenarios/suites/conversations.yaml").read_text()
    start = text.index("  - id: conv.office-delete-declined")
    body = text[start : text.index("  - id: conv.office-book-room-headcount")]
    server = (
        f"servers:\n  - name: office_http\n    transport: http\n    url: {office_url}\n"
        "    reset: {tool: reset_office}\n"
    )
    scenario = _suite(tmp_path, body.replace("servers: [office]", "servers: [office_http]"), server)
    script = ideal_script(scenario)
    if mistake:
        delete = [item for item in ideal_script(scenario.turn_scenario(1)) if "call" in item]
        script = _script(scenario, 1, [*delete, *delete, {"answer": "Done."}])
    result = _run(warm, scenario, script, str(tmp_path / "asks.yaml"))
    assert result.outcome == ("forbidden_call" if mistake else "pass"), result.detail
    assert [(e.server, e.action, e.scripted) for e in result.elicitations] == [
        ("office_http", "decline", True)
    ] * (2 if mistake else 1)


PAYLOAD = "<script>document.title='pwned'</script>"


def test_the_stored_exchange_shows_escaped_in_trial_show_and_the_trial_page(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    scenario = BY_ID["conv.office-book-room-headcount"]
    # The server quotes the date it was given in its question: a script payload through it.
    booking = {"room": "Attic", "date": PAYLOAD}
    script = _script(scenario, 1, [{"call": {"name": "book_room", "arguments": booking}}])
    runtime, settings = warm
    spec = trial(scenario, [*script, {"answer": "Booked."}], suite="conversations")
    result = runtime.run(spec, settings)
    assert [e.message for e in result.elicitations] == [
        f"How many people will attend in Attic on {PAYLOAD}?"
    ]
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    save_trial(engine=engine, spec=spec, result=result)
    record = trial_record(engine=engine, trial_id=spec.trial_id)
    assert record is not None
    story = entries(record.trial, record.calls)
    booked = next(i for i, x in enumerate(story) if x.kind == "call" and x.text == "book_room")
    assert (story[booked + 1].kind, story[booked + 1].index) == ("elicit", 1)
    page = trial_page(record)
    assert PAYLOAD not in page
    assert "elicitation from office" in page and "&lt;script&gt;" in page
    out = Console(record=True, width=200)
    print_trial(record, out)
    shown = out.export_text()
    assert "elicitation from office" in shown and 'accept {"people": 3}' in shown
    report = _transcript(record.trial)
    assert "[elicitation from office]" in report and PAYLOAD not in report


def test_an_embedded_sweep_stores_the_exchanges_and_rescore_grades_them_alike(
    settings: Settings,
) -> None:
    scenario = BY_ID["conv.office-delete-declined"]
    delete = [item for item in ideal_script(scenario.turn_scenario(1)) if "call" in item]
    ignoring = _script(scenario, 1, [*delete, *delete, {"answer": "Done."}])
    sweep = SweepSpec(
        name="asks",
        models=[scripted(ideal_script(scenario), "ideal"), scripted(ignoring, "ignores")],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=["conversations"], ids=[scenario.id]),
        repetitions=1,
        paraphrases="verbatim",
    )
    engine, plan = run_sweep_embedded(sweep, settings)
    with engine.begin() as conn:
        stored = conn.execute(
            text("select model_id, trial_id, outcome, elicitations_json from trial"),
        ).all()
        scoring = record_scoring(conn, plan.sweep_id, JudgeSettings(), "rescore", "test")
    asked = {m: [Elicitation.model_validate(e) for e in json.loads(j)] for m, _t, _o, j in stored}
    assert [e.action for e in asked["ideal"]] == ["decline"]
    assert [e.call for e in asked["ignores"]] == [1, 2]
    outcomes = {m: o for m, _t, o, _j in stored}
    assert outcomes == {"ideal": "pass", "ignores": "forbidden_call"}
    for model, trial_id, outcome, _j in stored:
        summary = load_task("farm.rescore_trial")(
            {"trial_id": trial_id, "scoring_id": scoring, "judge": JudgeSettings().model_dump()},
            settings,
        )
        assert (model, summary.outcome) == (model, outcome)


def test_after_a_continued_turn_each_exchange_still_follows_the_models_own_call() -> None:
    farm = {"id": "farm_0_0", "name": "book_room", "arguments": {"room": "Attic"}}
    own = {"id": "c1", "name": "book_room", "arguments": {"room": "Harbor"}}
    transcript = [
        {"role": "user", "content": "Book the Attic."},
        {"role": "assistant", "content": "", "tool_calls": [farm], "farm": True},
        {"role": "tool", "content": "Booked.", "tool_call_id": "farm_0_0", "farm": True},
        {"role": "user", "content": "And Harbor."},
        {"role": "assistant", "content": "", "tool_calls": [own]},
        {"role": "tool", "content": "Not booked.", "tool_call_id": "c1"},
    ]
    exchange = {"call": 0, "server": "office", "message": "How many?", "action": "cancel"}
    trial_row = SimpleNamespace(
        setup_json="[]",
        transcript_json=json.dumps(transcript),
        elicitations_json=json.dumps([{**exchange, "scripted": True}]),
    )
    row = SimpleNamespace(idx=0, ok=True, error=None, latency_s=0.1, server="office")
    story = entries(trial_row, [row])
    calls = [(x.kind, x.index, x.arguments) for x in story if x.kind in ("call", "elicit")]
    assert calls[0][:2] == ("call", None)  # the farm's call: no row of its own
    assert calls[1][:2] == ("call", 0) and "Harbor" in calls[1][2]
    assert calls[2][:2] == ("elicit", 0)


TYPO = """\
  - id: asks.book-attic
    version: 1
    tier: moderate
    servers: [office]
    turns:
      - user: Book the Attic for 2026-03-12.
        paraphrases: [reserve the Attic on 2026-03-12]
        elicit:
          - {field: FIELD, action: accept, content: {people: 3}}
        expect:
          - tool: book_room
            params: {room: Attic, date: "2026-03-12", people: {optional: 3}}
            example: {room: Attic, date: "2026-03-12"}
        example_answer: "Booked the Attic on 2026-03-12 for 3 people."
"""


def test_an_elicit_entry_with_a_typo_fails_the_ideal_agents_self_check(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    # Issue 36, item 20: a `field:` typo left the request unscripted; it was declined quietly
    # and the ideal agent could still pass. In a scenario that scripts any answer, the
    # self-check's ideal-agent check names every request no entry answered.
    suite = str(tmp_path / "asks.yaml")
    typo = _suite(tmp_path, TYPO.replace("FIELD", "peopel"))
    result = _run(warm, typo, ideal_script(typo), suite=suite)
    assert [e.scripted for e in result.elicitations] == [False]
    problems = ideal_call_problems(typo, result)
    assert any("no `elicit` entry answered it" in p for p in problems), problems
    right = _suite(tmp_path, TYPO.replace("FIELD", "people"))
    result = _run(warm, right, ideal_script(right), suite=suite)
    assert [e.scripted for e in result.elicitations] == [True]
    assert ideal_call_problems(right, result) == []
