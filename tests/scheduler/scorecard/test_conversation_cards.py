"""Conversations and recovery on the scorecard, in JUnit, in `farm compare` and in gates: pass^k
of conversations and turns, recovery per tool, tier and scenario row, a JUnit case per turn,
the conversation and turn pass rates compared with their significance, and gates on them."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest
from pydantic import ValidationError
from rich.console import Console
from sqlalchemy import insert
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from bench.synthetic import load
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.report.formats import to_junit, to_markdown
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.compare import Side, compare
from mcp_farm.scheduler.scorecard.gates import check_gates
from mcp_farm.schema import Gate
from mcp_farm.schema.db import TrialRow, init_db, make_engine
from mcp_farm.schema.scorecard import Scorecard

ROOT = Path(__file__).resolve().parents[3]
Turns = Sequence[str]
"""The outcome of each turn a trial reached, in order."""


def _trial(
    sweep: str,
    scenario: str,
    rep: int,
    turns: Turns,
    *,
    model: str = "m",
    prompt: str = "native",
    tools: Sequence[str] = ("send_email",),
    tier: str = "simple",
    recovered: bool | None = None,
    detail: str = "",
) -> dict[str, object]:
    """One stored trial; a conversation when it has turns."""
    results = [
        {
            "index": i,
            "user": f"message {i + 1}",
            "first_call": 0,
            "stop_reason": "answer",
            "outcome": outcome,
            "detail": "" if outcome == "pass" else detail or f"{outcome} in turn {i + 1}",
        }
        for i, outcome in enumerate(turns)
    ]
    outcome = next((o for o in turns if o != "pass"), "pass") if turns else "pass"
    return {
        "trial_id": f"{sweep}:{model}:{prompt}:{scenario}:{rep}",
        "sweep_id": sweep,
        "model_id": model,
        "prompt_id": prompt,
        "scenario_id": scenario,
        "scenario_version": 1,
        "tier": tier,
        "expected_tools": json.dumps(list(tools)),
        "repetition": rep,
        "status": "done",
        "outcome": outcome,
        "latency_s": 1.0,
        "turns_json": json.dumps(results),
        "recovered": recovered,
        "payload_json": "{}",
    }


def _store(engine: Engine, sweep: str, rows: Iterator[dict[str, object]]) -> None:
    load(engine, sweep, iter(()))
    with engine.begin() as conn:
        conn.execute(insert(TrialRow), list(rows))


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    return engine


def _three_kinds(sweep: str) -> Iterator[dict[str, object]]:
    """Three conversation scenarios of three repetitions: one always passes; one fails its
    second turn once; one fails its first turn once, and that repetition (under `stop`) never
    reaches the second."""
    for rep in range(3):
        yield _trial(sweep, "always", rep, ["pass", "pass"])
        yield _trial(sweep, "second", rep, ["pass", "wrong_params" if rep == 1 else "pass"])
        yield _trial(sweep, "first", rep, ["guessed"] if rep == 0 else ["pass", "pass"])


def test_pass_k_of_conversations_and_of_turns_counts_every_repetition(engine: Engine) -> None:
    _store(engine, "s", _three_kinds("s"))
    talk = build_scorecard(engine=engine, sweep_id="s").conversations[0]
    assert (talk.conversations, talk.passed, talk.k) == (9, 7, 3)
    # Only `always` passes all three times.
    assert talk.pass_hat_k == pytest.approx(1 / 3)
    # All three times: always 1, 1; second 1, 0; first 0 (guessed once), 0 (passed in the
    # two repetitions that reached it, of three).
    assert talk.turn_pass_hat_k == pytest.approx(3 / 6)
    assert (talk.turns, talk.turns_passed) == (17, 15)
    assert talk.first_failing_turn == {"1": 1, "2": 1}
    card = build_scorecard(engine=engine, sweep_id="s")
    console = Console(record=True, width=200)
    print_scorecard(card, console)
    for medium in (to_markdown(card), to_html(card), console.export_text()):
        assert "33% / 50% (k=3)" in medium
    assert json.loads(card.model_dump_json())["conversations"][0]["k"] == 3


def test_a_card_with_conversations_and_recovery_validates_against_the_published_schema(
    engine: Engine,
) -> None:
    _store(engine, "s", iter([*_three_kinds("s"), _trial("s", "x", 0, [], recovered=True)]))
    card = build_scorecard(engine=engine, sweep_id="s")
    assert card.turns and card.conversations and card.of("config")[0].errored == 1
    published = json.loads((ROOT / "docs" / "scorecard.schema.json").read_text())
    jsonschema.validate(json.loads(card.model_dump_json()), published)
    assert Scorecard.model_validate_json(card.model_dump_json()) == card


def test_one_repetition_gives_pass_k_as_the_rate_and_reports_show_a_dash(engine: Engine) -> None:
    _store(engine, "s", iter([_trial("s", "a", 0, ["pass"]), _trial("s", "b", 0, ["guessed"])]))
    card = build_scorecard(engine=engine, sweep_id="s")
    assert (card.conversations[0].k, card.conversations[0].pass_hat_k) == (1, 0.5)
    row = next(line for line in to_markdown(card).splitlines() if "| 1/2 (50%) |" in line)
    assert "| – |" in row


def test_a_card_keeps_each_turn_of_each_conversation_with_its_first_failure(
    engine: Engine,
) -> None:
    _store(engine, "s", _three_kinds("s"))
    card = build_scorecard(engine=engine, sweep_id="s")
    turns = {(t.scenario, t.turn): t for t in card.turns}
    assert sorted(turns) == [(s, t) for s in ("always", "first", "second") for t in (1, 2)]
    second = turns[("second", 2)]
    assert (second.conversations, second.graded, second.passes) == (3, 3, 2)
    assert second.outcomes == {"pass": 2, "wrong_params": 1}
    assert second.detail == "wrong_params in turn 2"
    unreached = turns[("first", 2)]
    assert (unreached.conversations, unreached.graded, unreached.passes) == (3, 2, 2)


def test_recovery_is_counted_per_tool_tier_and_scenario_row(engine: Engine) -> None:
    rows = [
        _trial("s", "a", 0, [], tools=["read"], tier="simple", recovered=True),
        _trial("s", "a", 1, [], tools=["read"], tier="simple", recovered=False),
        _trial("s", "a", 2, [], tools=["read"], tier="simple"),
        _trial("s", "b", 0, [], tools=["read", "write"], tier="complex", recovered=True),
        _trial("s", "c", 0, [], tools=["list"], tier="complex"),
    ]
    _store(engine, "s", iter(rows))
    card = build_scorecard(engine=engine, sweep_id="s")
    got = {(r.dimension, r.key): (r.errored, r.recovered, r.recovery_rate) for r in card.rows}
    assert got[("config", "")] == (3, 2, 2 / 3)
    assert got[("tool", "read")] == (3, 2, 2 / 3)
    assert got[("tool", "write")] == (1, 1, 1.0)
    assert got[("tool", "list")] == (0, 0, None)
    assert got[("tier", "simple")] == (2, 1, 0.5)
    assert got[("scenario", "b")] == (1, 1, 1.0)
    markdown = to_markdown(card)
    assert "| m | native | read | 4 | 100% | – | 2/3 (67%) |" in markdown
    assert "| m | native | list | 1 | 100% | – | – |" in markdown


def test_postgres_counts_recovery_per_row_as_sqlite_does(engine: Engine, pg_engine: Engine) -> None:
    init_db(pg_engine)
    for each in (engine, pg_engine):
        rows = [
            _trial("s", "a", rep, ["pass"], tools=["read"], recovered=[True, False, None][rep])
            for rep in range(3)
        ]
        _store(each, "s", iter(rows))
    sqlite, postgres = (build_scorecard(engine=e, sweep_id="s") for e in (engine, pg_engine))
    assert [r.model_dump() for r in postgres.rows] == [r.model_dump() for r in sqlite.rows]
    assert postgres.of("tool")[0].recovery_rate == 0.5
    assert postgres.conversations == sqlite.conversations


def test_junit_shows_a_conversation_as_a_class_with_a_case_per_turn(engine: Engine) -> None:
    rows = [
        _trial("s", "conv.mail", rep, ["pass", "wrong_params" if rep else "pass"], detail=d)
        for rep, d in enumerate(["", "to: 'bob\x1b' does not match"])
    ]
    _store(engine, "s", iter(rows))
    root = ET.fromstring(to_junit(build_scorecard(engine=engine, sweep_id="s")))
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("3", "2")
    turns = {c.get("name"): c for c in suite if c.get("classname") == "m.native.conv.mail"}
    assert sorted(turns) == ["turn 1", "turn 2"]
    assert turns["turn 1"].find("failure") is None
    failure = turns["turn 2"].find("failure")
    assert failure is not None
    message = failure.get("message") or ""
    assert message.startswith("turn 2 passed 1/2: wrong_params 1: to: 'bob")
    # The control character is shown as its escape, as everywhere a report shows text.
    assert "\x1b" not in message and "\\x1b" in message
    conversation = next(c for c in suite if c.get("name") == "conv.mail")
    conversation_failure = conversation.find("failure")
    assert conversation_failure is not None
    assert "failed turns: turn 2 (1)" in (conversation_failure.get("message") or "")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert (properties["conversation_pass_rate"], properties["turn_pass_rate"]) == (
        "0.5000",
        "0.7500",
    )


def test_junit_of_one_prompt_scenarios_has_no_turn_cases(engine: Engine) -> None:
    _store(engine, "s", iter([_trial("s", "a", 0, []), _trial("s", "b", 0, [])]))
    card = build_scorecard(engine=engine, sweep_id="s")
    assert card.turns == [] and card.conversations == []
    root = ET.fromstring(to_junit(card))
    assert sorted(c.get("name") or "" for c in root.iter("testcase")) == ["a", "b"]
    assert not any("conversation" in (p.get("name") or "") for p in root.iter("property"))


SCENARIOS = [f"conv.{i}" for i in range(6)]


def _sweep(sweep: str, second: str, prompt: str = "native") -> Iterator[dict[str, object]]:
    for scenario in SCENARIOS:
        for rep in range(5):
            yield _trial(sweep, scenario, rep, ["pass", second], prompt=prompt)


def test_compare_flags_a_conversation_and_turn_pass_rate_regression(engine: Engine) -> None:
    _store(engine, "base", _sweep("base", "pass"))
    _store(engine, "worse", _sweep("worse", "no_tool_call"))
    found = compare(engine, Side.parse("base"), Side.parse("worse"), ["conversation", "turn"])
    cells = {(c.dimension, c.label): c for c in found}
    assert set(cells) == {("conversation", "m/native"), ("turn", "m/native")}
    talk, turn = cells[("conversation", "m/native")], cells[("turn", "m/native")]
    assert (talk.diff.a_rate, talk.diff.b_rate, talk.verdict) == (1.0, 0.0, "regression")
    assert (turn.diff.a_rate, turn.diff.b_rate, turn.verdict) == (1.0, 0.5, "regression")
    assert (talk.diff.clusters, turn.diff.a_n) == (6, 60)


def test_compare_of_two_configs_in_one_sweep_and_of_sweeps_without_conversations(
    engine: Engine,
) -> None:
    _store(engine, "s", iter([*_sweep("s", "pass"), *_sweep("s", "pass", prompt="json")]))
    found = compare(engine, Side.parse("s@m/native"), Side.parse("s@m/json"), ["conversation"])
    assert [(c.label, c.verdict) for c in found] == [("all", "same")]
    _store(engine, "plain", iter([_trial("plain", "a", 0, [])]))
    assert compare(engine, Side.parse("plain"), Side.parse("plain"), ["turn"]) == []


def test_gates_on_conversation_turn_and_recovery_rates(engine: Engine) -> None:
    _store(engine, "s", _three_kinds("s"))
    card = build_scorecard(engine=engine, sweep_id="s")
    checked, breaches = check_gates(
        card,
        [
            Gate(metric="conversation_pass_rate", min=0.9),
            Gate(metric="turn_pass_rate", min=0.8),
            Gate(metric="recovery_rate", per="tool", min=0.5),
        ],
    )
    # No call failed in this sweep: the recovery gate checks no row and does not fail.
    assert checked == 2
    assert [b.explain() for b in breaches] == [
        "conversation_pass_rate >= 0.9 per config: m/native is 0.778"
    ]


def test_a_conversation_gate_without_conversations_fails_and_one_per_tool_is_refused(
    engine: Engine,
) -> None:
    _store(engine, "s", iter([_trial("s", "a", 0, [], recovered=False)]))
    card = build_scorecard(engine=engine, sweep_id="s")
    _, breaches = check_gates(card, [Gate(metric="turn_pass_rate", min=0.5)])
    assert breaches[0].explain() == "turn_pass_rate >= 0.5 per config: no scorecard row matches it"
    _, recovery = check_gates(card, [Gate(metric="recovery_rate", per="scenario", min=0.5)])
    assert recovery[0].explain() == "recovery_rate >= 0.5 per scenario: m/native a is 0"
    with pytest.raises(ValidationError, match="per config only"):
        Gate(metric="conversation_pass_rate", per="tool", min=0.5)


def _farm(engine: Engine, *args: str) -> tuple[int, str]:
    url = str(engine.url.render_as_string(hide_password=False))
    result = CliRunner().invoke(app, [*args, "--db", url], env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_farm_compare_lists_conversation_and_turn_cells_by_default(engine: Engine) -> None:
    _store(engine, "base", _sweep("base", "pass"))
    _store(engine, "worse", _sweep("worse", "no_tool_call"))
    code, said = _farm(engine, "compare", "base", "worse", "--fail-on-regression")
    assert code == 1, said
    cells = [[c.strip() for c in line.split("│")[1:]] for line in said.splitlines()]
    kinds = {c[0]: c for c in cells if len(c) > 3 and c[1] == "m/native"}
    assert kinds["conversation"][-2:] == ["regression", ""]
    assert (kinds["turn"][4], kinds["turn"][-2]) == ("-50pt", "regression")


def test_farm_report_gate_exits_non_zero_on_a_conversation_gate(
    engine: Engine, tmp_path: Path
) -> None:
    _store(engine, "s", _three_kinds("s"))
    model = {"id": "m", "adapter": "scripted", "model": "s", "script": []}
    spec = {"name": "g", "models": [model], "prompts": ["native"]}
    for bound, expected in ((0.7, 0), (0.9, 1)):
        gates = tmp_path / f"gates-{bound}.yaml"
        rule = {"metric": "conversation_pass_rate", "min": bound}
        gates.write_text(json.dumps({**spec, "gates": [rule]}))
        code, said = _farm(engine, "report", "s", "--gate", "--gates", str(gates), "-f", "md")
        assert code == expected, said
