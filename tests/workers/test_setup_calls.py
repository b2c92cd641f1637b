"""Seeding servers before the model starts: `setup:` calls through the trial's own servers,
recorded apart from the model's calls, never leaking into the next trial."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from mcp_farm.scenarios import (
    ScenarioError,
    load_suite,
)
from mcp_farm.scenarios.validate import check_file
from mcp_farm.scheduler.report.html.page import _transcript
from mcp_farm.schema import (
    Settings,
    TrialResult,
)
from mcp_farm.schema.db import (
    init_db,
    make_engine,
)
from mcp_farm.workers.node.runtime import Runtime
from mcp_farm.workers.store.results import save_trial
from mcp_farm.workers.trial import execute_trial
from tests.helpers import trial

pytestmark = pytest.mark.integration
MEMO_SERVER = Path(__file__).resolve().parent.parent / "servers" / "memo.py"
MEMO = f'  - name: memo\n    command: ["{{python}}", "{MEMO_SERVER}"]\n    reuse: false'
SEEDED = """
  - id: memo.seeded
    version: 1
    tier: simple
    prompt: What memos do I have?
    servers: [memo]
    setup:
      - {tool: add_memo, arguments: {text: call the plumber}}
      - {server: memo, tool: add_memo, arguments: {text: renew the passport}}
    expect:
      - tool: list_notes
    final_answer: plumber
"""
NOTES_SEEDED = """
  - id: notes.seeded
    version: 1
    tier: simple
    prompt: What notes do I have?
    servers: [notes]
    setup:
      - {tool: create_note, arguments: {title: Seeded secret, content: only for this trial}}
    expect:
      - tool: list_notes
  - id: notes.plain
    version: 1
    tier: simple
    prompt: What notes do I have?
    servers: [notes]
    expect:
      - tool: list_notes
"""
LIST_THEN_ANSWER = [
    {"call": {"name": "list_notes", "arguments": {}}},
    {"answer": "You should call the plumber and renew the passport."},
]


def _suite(tmp_path: Path, scenarios: str, servers: str = MEMO) -> str:
    path = tmp_path / "seeded.yaml"
    path.write_text(f"suite: seeded\nservers:\n{servers}\nscenarios:{scenarios}")
    return str(path)


def _run(
    suite: str, script: list[dict[str, object]], settings: Settings, n: int = 0
) -> TrialResult:
    scenario = load_suite(suite).scenarios[n]
    return anyio.run(execute_trial, trial(scenario, script, suite=suite), settings)


def test_setup_calls_seed_an_in_memory_server_before_the_model_starts(
    tmp_path: Path, settings: Settings
) -> None:
    result = _run(_suite(tmp_path, SEEDED), LIST_THEN_ANSWER, settings)
    assert result.outcome == "pass", result.detail
    assert [(c.server, c.tool, c.ok) for c in result.setup_calls] == [
        ("memo", "add_memo", True),
        ("memo", "add_memo", True),
    ]
    # Only the model's call is graded and counted as the model's.
    assert [c.tool for c in result.tool_calls] == ["list_notes"]
    assert "1. call the plumber\n2. renew the passport" in result.tool_calls[0].result_text
    # The model never sees the setup: its transcript starts with the system prompt and request.
    assert [m.role for m in result.transcript[:2]] == ["system", "user"]
    assert "add_memo" not in json.dumps([m.content for m in result.transcript])


def test_a_failing_setup_call_is_an_infra_error_naming_the_call(
    tmp_path: Path, settings: Settings
) -> None:
    broken = SEEDED.replace("renew the passport", "' '")
    result = _run(_suite(tmp_path, broken), LIST_THEN_ANSWER, settings)
    assert result.outcome == "infra_error"
    assert "setup[1] memo.add_memo failed" in result.detail
    assert "a memo needs some text" in result.detail
    assert result.turns == 0 and result.tool_calls == []  # the model was never asked
    assert [c.ok for c in result.setup_calls] == [True, False]


def test_a_setup_tool_no_server_lists_is_an_infra_error(tmp_path: Path, settings: Settings) -> None:
    result = _run(
        _suite(tmp_path, SEEDED.replace("tool: add_memo", "tool: add_memos")), [], settings
    )
    assert result.outcome == "infra_error"
    assert "setup tool 'add_memos' is not listed by any attached server" in result.detail


@pytest.fixture
def runtime(settings: Settings) -> Iterator[Runtime]:
    rt = Runtime(settings)
    try:
        yield rt
    finally:
        rt.close()


def test_state_seeded_into_a_warm_server_is_gone_for_the_next_trial(
    tmp_path: Path, settings: Settings, runtime: Runtime
) -> None:
    suite = _suite(tmp_path, NOTES_SEEDED, servers="  []")
    seeded, plain = load_suite(suite).scenarios
    listing = [{"call": {"name": "list_notes", "arguments": {}}}, {"answer": "done"}]
    first = runtime.run(trial(seeded, listing, suite=suite), settings)
    second = runtime.run(trial(plain, listing, suite=suite), settings)
    assert "Seeded secret" in first.tool_calls[0].result_text
    assert "Seeded secret" not in second.tool_calls[0].result_text
    assert runtime.pool.started == 1  # the warm server was reset, not replaced


def test_an_in_memory_server_is_started_fresh_for_every_seeded_trial(
    tmp_path: Path, settings: Settings, runtime: Runtime
) -> None:
    scenario = load_suite(suite := _suite(tmp_path, SEEDED)).scenarios[0]
    for repetition in (0, 1):
        result = runtime.run(
            trial(scenario, LIST_THEN_ANSWER, suite=suite, repetition=repetition), settings
        )
        # Seeded twice, listed once each: never four memos.
        assert result.tool_calls[0].result_text.count("\n") == 1, result.tool_calls[0].result_text
    assert runtime.pool.started == 2


@pytest.mark.parametrize(
    ("servers", "scenarios", "field", "message"),
    [
        (
            MEMO.replace("reuse: false", "reuse: true"),
            SEEDED,
            "scenarios[0].setup[0].server",
            "give the server `reuse: false`",
        ),
        (
            MEMO,
            SEEDED.replace("server: memo,", "server: notes,"),
            "scenarios[0].setup[1].server",
            "'notes' is not attached",
        ),
        (
            MEMO,
            SEEDED.replace("servers: [memo]", "servers: [memo, notes]"),
            "scenarios[0].setup[0].server",
            "name the server",
        ),
    ],
    ids=["warm-and-no-sandbox", "not-attached", "several-servers"],
)
def test_setup_that_cannot_be_run_safely_is_refused_when_the_suite_loads(
    tmp_path: Path, servers: str, scenarios: str, field: str, message: str
) -> None:
    suite = _suite(tmp_path, scenarios, servers)
    with pytest.raises(ScenarioError, match="setup") as raised:
        load_suite(suite)
    assert raised.value.field == field and message in str(raised.value)
    _parsed, problems = check_file(Path(suite))
    assert field in [p.field for p in problems]


def _stored_setup(
    engine: Engine, result: TrialResult, suite: str
) -> tuple[list[dict[str, object]], int]:
    init_db(engine)
    spec = trial(load_suite(suite).scenarios[0], LIST_THEN_ANSWER, suite=suite)
    save_trial(
        engine=engine, spec=spec, result=result.model_copy(update={"trial_id": spec.trial_id})
    )
    with engine.connect() as conn:
        setup = json.loads(conn.execute(text("select setup_json from trial")).scalar_one())
        calls = conn.execute(text("select count(*) from tool_call")).scalar_one()
    return setup, calls


def test_setup_calls_are_stored_apart_from_the_models_calls_alike_on_sqlite_and_postgres(
    tmp_path: Path, settings: Settings, pg_engine: Engine
) -> None:
    suite = _suite(tmp_path, SEEDED)
    result = _run(suite, LIST_THEN_ANSWER, settings)
    sqlite = _stored_setup(make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}"), result, suite)
    assert sqlite == _stored_setup(pg_engine, result, suite)
    setup, model_calls = sqlite
    assert model_calls == 1
    assert [(c["tool"], c["arguments"]) for c in setup] == [
        ("add_memo", {"text": "call the plumber"}),
        ("add_memo", {"text": "renew the passport"}),
    ]


def test_the_html_drill_down_shows_setup_calls_before_the_conversation() -> None:
    row = SimpleNamespace(
        setup_json=json.dumps(
            [
                {"server": "memo", "tool": "add_memo", "arguments": {"text": "a"}, "ok": True},
                {"server": "memo", "tool": "add_memo", "arguments": {}, "ok": False, "error": "no"},
            ]
        ),
        transcript_json=json.dumps([{"role": "user", "content": "What memos?"}]),
    )
    assert _transcript(row).splitlines() == [
        "[setup] memo.add_memo({&quot;text&quot;: &quot;a&quot;})",
        "",
        "[setup] memo.add_memo({}) failed: no",
        "",
        "[user] What memos?",
    ]
