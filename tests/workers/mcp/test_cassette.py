"""Cassettes: a trial's MCP exchanges captured into a file, then served in the server's place,
over stdio and over streamable HTTP, to a different scripted model. Recorded calls get their
recorded answers; any other call is a tool error, and its trial is marked as off the cassette."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_farm.scenarios import ScenarioError, load_suite
from mcp_farm.scenarios.cassette import load_cassette
from mcp_farm.schema import Settings, SpecError, TrialResult
from mcp_farm.schema.redact import forget_secrets
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import trial

pytestmark = pytest.mark.integration
ENVINFO = Path(__file__).resolve().parents[2] / "servers" / "envinfo.py"
SCENARIO = """
scenarios:
  - id: taped.groceries
    version: 1
    tier: simple
    prompt: Add oat milk to my groceries note.
    servers: [notes]
    expect:
      - tool: append_to_note
        params: {note_id: {regex: "groceries"}, text: {regex: "(?s).*oat milk.*"}}
    allowed_extra: [read_note, list_notes]
    final_answer: added
"""
READ = {"name": "read_note", "arguments": {"note_id": "groceries"}}
APPEND = {"name": "append_to_note", "arguments": {"note_id": "groceries", "text": "- oat milk"}}
RECORDING = [{"call": READ}, {"call": APPEND}, {"call": READ}, {"answer": "added"}]


def _run(rt: Runtime, settings: Settings, suite: Path, script: list[Any], rep: int = 0) -> Any:
    scenario = load_suite(str(suite)).scenarios[0]
    return rt.run(trial(scenario, script, suite=str(suite), repetition=rep), settings)


def _settings(folder: Path, **extra: Any) -> Settings:
    return Settings(
        data_dir=folder / "data",
        database_url=f"sqlite:///{folder / 'farm.sqlite'}",
        server_start_timeout_s=20.0,
        **extra,
    )


def _captured(folder: Path, suite: Path, script: list[Any]) -> TrialResult:
    """One trial of the suite's scenario, its exchanges captured into `folder/cassettes`."""
    settings = _settings(folder, capture_dir=folder / "cassettes")
    rt = Runtime(settings)
    try:
        result: TrialResult = _run(rt, settings, suite, script)
    finally:
        rt.close()
    return result


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cassette of the live notes server, captured from one trial of a scripted model that
    reads the groceries note, appends to it and reads it again."""
    folder = tmp_path_factory.mktemp("recording")
    suite = folder / "live.yaml"
    suite.write_text("suite: live" + SCENARIO)
    result = _captured(folder, suite, RECORDING)
    assert result.outcome == "pass", result.detail
    return folder / "cassettes" / "notes.yaml"


def test_a_captured_cassette_holds_the_tools_and_every_call_with_its_whole_result(
    recorded: Path,
) -> None:
    cassette = load_cassette(recorded)
    assert cassette.server == "notes"
    assert "personal notes" in cassette.instructions
    assert {"read_note", "append_to_note", "list_notes"} <= {t.name for t in cassette.tools}
    schema = next(t for t in cassette.tools if t.name == "read_note").input_schema
    assert "note_id" in schema["properties"]
    calls = {c.tool: c for c in cassette.calls}
    # The same call twice, answered differently (the note changed in between): both answers,
    # in the order they came.
    first, second = (a.content[0]["text"] for a in calls["read_note"].answers)
    assert "oat milk" not in first and "oat milk" in second
    assert calls["append_to_note"].arguments == APPEND["arguments"]
    assert all(
        a.latency_s is not None and not a.is_error for c in cassette.calls for a in c.answers
    )
    # A file a person reads: text of several lines is a block, not an escaped string.
    assert "text: |" in recorded.read_text()


@pytest.fixture(params=["stdio", "http"])
def replayed(request: pytest.FixtureRequest, recorded: Path, tmp_path: Path) -> Iterator[Any]:
    """A suite whose notes server is the recorded cassette (a path relative to the suite),
    served over stdio or over streamable HTTP, and a runtime to run its trials."""
    (tmp_path / "tapes").mkdir()
    (tmp_path / "tapes" / "notes.yaml").write_bytes(recorded.read_bytes())
    suite = tmp_path / "replayed.yaml"
    server = f"  - name: notes\n    replay: tapes/notes.yaml\n    transport: {request.param}\n"
    suite.write_text("suite: replayed\nservers:\n" + server + SCENARIO)
    settings = _settings(tmp_path)
    rt = Runtime(settings)
    try:
        yield request.param, rt, settings, suite
    finally:
        rt.close()


def test_recorded_calls_pass_and_an_unrecorded_call_is_a_tool_error_marking_the_trial(
    replayed: Any,
) -> None:
    transport, rt, settings, suite = replayed
    # A different model: it appends straight away (its arguments in another order).
    straight = [{"call": {**APPEND, "arguments": {"text": "- oat milk", "note_id": "groceries"}}}]
    passed = _run(rt, settings, suite, [*straight, {"answer": "added"}])
    assert passed.outcome == "pass", passed.detail
    assert passed.tool_calls[0].ok and passed.tool_calls[0].result_text.startswith("appended")
    assert not passed.left_cassette

    off = {"name": "read_note", "arguments": {"note_id": "gift-ideas"}}
    strayed = _run(rt, settings, suite, [{"call": off}, *straight, {"answer": "added"}], rep=1)
    call = strayed.tool_calls[0]
    assert not call.ok
    assert (call.error or "").startswith('not in cassette: read_note {"note_id":"gift-ideas"}')
    assert strayed.left_cassette
    assert strayed.outcome == "pass"  # graded as ever: the failed look-around is allowed
    if transport == "http":
        assert rt.pool.sessions_opened >= 2  # one session per trial on the shared process
    else:
        assert rt.pool.sessions_opened == 0


def test_a_call_repeated_in_a_trial_gets_the_recorded_answers_in_order_in_every_trial(
    replayed: Any,
) -> None:
    _transport, rt, settings, suite = replayed
    script = [{"call": READ}, {"call": READ}, {"call": READ}, {"answer": "nothing to add"}]
    for rep in (0, 1):  # the second trial starts again from the first answer
        result = _run(rt, settings, suite, script, rep=rep)
        texts = [c.result_text for c in result.tool_calls]
        assert "oat milk" not in texts[0]
        assert "oat milk" in texts[1] and texts[2] == texts[1]
        assert not result.left_cassette


def test_a_secret_in_a_result_is_masked_in_the_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "cassette-secret-4711"
    monkeypatch.setenv("FARM_TEST_CASSETTE_TOKEN", token)
    suite = tmp_path / "env.yaml"
    suite.write_text(f"""
suite: env
servers:
  - name: envinfo
    command: ["{{python}}", "{ENVINFO}"]
    env: {{TOKEN: "{{env:FARM_TEST_CASSETTE_TOKEN}}"}}
scenarios:
  - id: env.token
    version: 1
    tier: simple
    prompt: What is the token?
    servers: [envinfo]
    expect:
      - tool: variable_value
        params: {{name: TOKEN}}
""")
    call = {"name": "variable_value", "arguments": {"name": "TOKEN"}}
    try:
        result = _captured(tmp_path, suite, [{"call": call}, {"answer": "done"}])
    finally:
        forget_secrets()
    assert result.outcome == "pass", result.detail
    text = (tmp_path / "cassettes" / "envinfo.yaml").read_text()
    assert token not in text
    assert "TOKEN=***" in text


def test_a_malformed_cassette_is_refused_naming_the_file_the_field_and_its_line(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "cassette: 1\nserver: notes\ntools:\n  - name: read_note\n"
        "calls:\n  - tool: read_nope\n    answers: [{content: []}]\n"
    )
    with pytest.raises(SpecError) as raised:
        load_cassette(bad)
    assert raised.value.source == str(bad)
    assert (raised.value.field, raised.value.line) == ("calls[0].tool", 6)
    assert "'read_nope' is not in `tools`" in str(raised.value)

    suite = tmp_path / "suite.yaml"
    suite.write_text("suite: s\nservers:\n  - name: notes\n    replay: bad.yaml\n" + SCENARIO)
    with pytest.raises(ScenarioError) as in_suite:
        load_suite(str(suite))
    assert in_suite.value.field == "servers[0].replay"
    assert f"{bad}:6: calls[0].tool" in str(in_suite.value)

    missing = suite.with_name("missing.yaml")
    missing.write_text("suite: s\nservers:\n  - name: notes\n    replay: gone.yaml\n" + SCENARIO)
    with pytest.raises(ScenarioError, match=r"gone\.yaml: file not found"):
        load_suite(str(missing))


def test_the_cassette_server_refuses_a_content_block_mcp_would_not_accept(tmp_path: Path) -> None:
    bad = tmp_path / "image.yaml"
    answer = {"content": [{"type": "image", "mime_type": "image/png"}]}  # no `data`
    bad.write_text(
        yaml.safe_dump(
            {
                "cassette": 1,
                "server": "pictures",
                "tools": [{"name": "snap"}],
                "calls": [{"tool": "snap", "answers": [answer]}],
            }
        )
    )
    started = subprocess.run(
        [sys.executable, "-m", "mcp_farm.scenarios.cassette.serve", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert started.returncode == 2
    assert f"cannot serve the cassette: {bad}" in started.stderr
    assert "calls[0].answers[0].content[0]" in started.stderr


def test_a_replay_server_stands_alone_in_its_definition() -> None:
    from mcp_farm.schema import ServerDef

    with pytest.raises(ValueError, match="leave out `command`, `sandbox`"):
        ServerDef(name="x", replay="x.yaml", command=["srv"], sandbox="notes")
    assert ServerDef(name="x", replay="x.yaml", transport="http").url is None
