"""`from_key` on a result that is not JSON: named by validate (which makes the source step's
example call on the real server) and in the grade's detail, instead of "not the value"; and
validate reads an example's numbers by the schema the started server lists, as a grade does."""

from __future__ import annotations

from pathlib import Path

from mcp_farm.scenarios import load_suite
from mcp_farm.scenarios.validate import check_file
from mcp_farm.schema import Settings
from mcp_farm.schema.tasks.messages import (
    CallCheckRequest,
    SuiteToCheck,
)
from mcp_farm.workers.mcp.listing import check_calls
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import (
    ideal_script,
    trial,
)

SERVER = Path(__file__).resolve().parents[2] / "servers" / "reprs.py"


def _scenario(sid: str, look_up: str, key: str) -> str:
    return f"""\
  - id: {sid}
    version: 1
    tier: moderate
    prompt: Look Ada up and note her status on her.
    servers: [reprs]
    expect:
      - tool: {look_up}
        params: {{name: {{any: true}}}}
        example: {{name: Ada}}
      - tool: add_note
        params:
          person: {{derived_from_step: 0, from_key: name}}
          note: {{derived_from_step: 0, from_key: {key}}}
        example: {{person: Ada Lovelace, note: "Status: paused since May"}}
"""


def _suite(tmp_path: Path) -> Path:
    text = f"""\
suite: reprs
servers:
  - name: reprs
    command: ["{{python}}", "{SERVER}"]
scenarios:
{_scenario("reprs.python", "find_person", "status")}
{_scenario("reprs.json", "find_person_json", "status")}
{_scenario("reprs.wrong-key", "find_person_json", "state")}
  - id: reprs.numbers
    version: 1
    tier: simple
    prompt: Rate it four stars, then pick two notes.
    servers: [reprs]
    expect:
      - tool: rate
        params: {{stars: 4}}
        example: {{stars: 4.0}}
      - tool: pick
        params: {{count: 2}}
        example: {{count: 2.0}}
"""
    path = tmp_path / "reprs.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_validate_names_from_keys_on_no_json_and_reads_numbers_by_the_listed_schema(
    settings: Settings, tmp_path: Path
) -> None:
    path = _suite(tmp_path)
    suite, problems = check_file(path)
    assert suite is not None and problems == []
    request = CallCheckRequest(suites=[SuiteToCheck(source=str(path), suite=suite)])
    found = {p.field: p.problem for p in check_calls(request, settings).problems}
    base = "scenarios[0].expect[1].params"
    assert set(found) == {
        f"{base}.person.from_key",
        f"{base}.note.from_key",
        "scenarios[2].expect[1].params.note.from_key",
        "scenarios[3].expect[1].example.count",  # an integer; `stars: 4.0` is a number
    }
    assert "expected 2, got 2.0" in found["scenarios[3].expect[1].example.count"]
    said = found[f"{base}.note.from_key"]
    assert "step 0's example call (find_person)" in said
    assert "is not a JSON object or array" in said
    assert "Person(name='Ada Lovelace'" in said
    assert "from_regex" in said
    assert "holds no key 'state'" in found["scenarios[2].expect[1].params.note.from_key"]


def test_validate_without_servers_makes_no_call(settings: Settings, tmp_path: Path) -> None:
    path = _suite(tmp_path)
    suite, _ = check_file(path)
    assert suite is not None
    request = CallCheckRequest(
        suites=[SuiteToCheck(source=str(path), suite=suite)], start_servers=False
    )
    found = [p.field for p in check_calls(request, settings).problems]
    # No schema at hand: number types are held as written.
    assert found == ["scenarios[3].expect[0].example.stars", "scenarios[3].expect[1].example.count"]


def test_the_grade_says_the_source_result_is_not_json(settings: Settings, tmp_path: Path) -> None:
    path = _suite(tmp_path)
    scenario = load_suite(str(path)).scenarios[0]
    runtime = Runtime(settings)
    try:
        result = runtime.run(trial(scenario, ideal_script(scenario), suite=str(path)), settings)
    finally:
        runtime.close()
    assert result.outcome == "wrong_params"
    assert "the result of step 0 is not a JSON object or array" in result.detail
    assert "Person(name=" in result.detail


def test_validate_reads_from_key_in_an_examples_structured_content(
    settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "structured.yaml"
    path.write_text(
        """\
suite: structured
servers:
  - name: workspace
    command: ["{python}", "-m", "mcp_farm.scenarios.servers.workspace"]
    reset: {tool: reset_workspace}
scenarios:
  - id: structured.twice
    version: 1
    tier: simple
    prompt: Add a task Book the dinner, then the same task once more.
    servers: [workspace]
    expect:
      - tool: add_task
        example: {title: Book the dinner}
      - tool: add_task
        params: {title: {derived_from_step: 0, from_key: title}}
        example: {title: Book the dinner}
""",
        encoding="utf-8",
    )
    suite, problems = check_file(path)
    assert suite is not None and problems == []
    request = CallCheckRequest(suites=[SuiteToCheck(source=str(path), suite=suite)])
    # add_task's text names no key; its structured content does.
    assert check_calls(request, settings).problems == []


def _sandboxed_suite(folder: Path, name: str, scenario: str) -> Path:
    """A suite whose server `files` is the fixture filesystem server on `folder/seed`."""
    text = f"""\
suite: {name}
servers:
  - name: files
    command: ["{{python}}", "-m", "mcp_farm.scenarios.servers.filesystem", "--root", "{{sandbox}}"]
    sandbox: ./seed
scenarios:
{scenario}
"""
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _chained(sid: str, example: str) -> str:
    return f"""\
  - id: {sid}
    version: 1
    tier: moderate
    prompt: Read who.json and write that person's name to invite.txt.
    servers: [files]
    expect:
      - tool: read_file
        params: {{path: {{any: true}}}}
{example}
      - tool: write_file
        params:
          path: {{any: true}}
          content: {{derived_from_step: 0, from_key: to}}
        example: {{path: invite.txt, content: Charles Babbage}}
"""


def test_validate_probes_each_suite_on_its_own_sandbox_when_two_name_a_server_alike(
    settings: Settings, tmp_path: Path
) -> None:
    # Issue 43, item 9: a server lent clean keeps its folder, and the pool took two suites'
    # `files` (same name and command, other sandboxes) for one: the second suite's probe read
    # the first one's folder, and its from_key "picked nothing".
    other, seeded = tmp_path / "other", tmp_path / "seeded"
    for folder in (other, seeded):
        (folder / "seed").mkdir(parents=True)
    (other / "seed" / "who.json").write_text('{"from": "Ada"}\n', encoding="utf-8")
    (seeded / "seed" / "who.json").write_text('{"from": "Ada", "to": "Charles Babbage"}\n')
    # The first suite's probe makes no call (its look-up has no example): its server goes
    # back to the pool clean, holding the other folder.
    first = _sandboxed_suite(other, "first", _chained("first.chain", ""))
    second = _sandboxed_suite(
        seeded, "second", _chained("second.chain", "        example: {path: who.json}")
    )
    suites = []
    for path in (first, second):
        suite, _problems = check_file(path)
        assert suite is not None
        suites.append(SuiteToCheck(source=str(path), suite=suite))
    problems = check_calls(CallCheckRequest(suites=suites), settings).problems
    assert [p for p in problems if p.source == str(second)] == []
