"""`farm scenarios validate` finds what used to surface only at run time, every problem of
every file in one pass, each with its line: unknown placeholders, tools the servers do not
list, examples that break their own matchers, and array or object matchers on string
arguments."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from mcp_farm.scenarios import validate
from mcp_farm.scenarios.tool_checks import ToolSchemas, tool_problems
from mcp_farm.scenarios.validate import check_file
from mcp_farm.scheduler.cli.app import app
from mcp_farm.schema import (
    ServerCatalog,
    ServerDef,
    Settings,
    SpecError,
    Suite,
    fill_placeholders,
    load_yaml_model,
    unknown_placeholders,
)
from mcp_farm.schema.tasks.messages import (
    CallCheckRequest,
    SuiteToCheck,
)
from mcp_farm.workers.mcp.listing import check_calls
from mcp_farm.workers.mcp.pool import (
    REPO_ROOT,
    _expand,
)
from tests.forkrun import farm_cli

PLACEHOLDERS = """\
suite: placeholders
servers:
  - name: mine
    command: ["{python}", "-m", "x", "--root", "{sandbx}", "--home", "{envv:HOME}",
              "--key", "{env:API_KEY}", '{"a": 1}', "{sandboxes}"]
    env: {WHERE: "{root}/{attach}"}
    sandbox: home
scenarios:
  - id: a
    version: 1
    tier: simple
    prompt: hi
    servers: [mine]
"""

CALLS = """\
suite: calls
scenarios:
  - id: fs.read
    version: 1
    tier: simple
    prompt: Read my todo list.
    servers: [filesystem]
    setup:
      - tool: seed_files
    expect:
      - tool: read_fil
        params: {path: {path: Documents/todo.txt}}
        example: {path: Documents/todo.txt}
      - tool: {one_of: [read_file, fetch_file]}
        params: {path: {contains: todo}}
        example: {path: [todo]}
    allowed_extra: [list_directory, peek]
  - id: fs.routes
    version: 1
    tier: simple
    prompt: What's on my desktop?
    servers: [filesystem]
    routes:
      - name: list
        expect:
          - tool: list_directory
            params: {path: {regex: "/?Desktop/?"}}
            example: {path: /Documents}
      - name: search
        expect:
          - tool: search_files
            params:
              pattern: {exact: "*"}
              path: {path: Desktop}
            example: {path: Desktop}
          - tool: get_file_info
            params: {path: {derived_from_step: 0}}
            example: {path: anything}
"""

BROKEN_SERVERS = """\
suite: broken
servers:
  - name: gone
    command: ["{root}/.tools/py/bin/mcp-server-that-is-not-there"]
  - name: broken
    command: ["/nonexistent/bin/server"]
  - name: dies
    command: ["{python}", "-c", "import sys; sys.exit(3)"]
scenarios:
  - id: a
    version: 1
    tier: simple
    prompt: hi
    servers: [gone, broken, dies]
    expect:
      - tool: anything
        example: {}
"""

THIRD_PARTY = [
    ".tools/node/node_modules/.bin/mcp-server-filesystem",
    ".tools/node/node_modules/.bin/mcp-server-memory",
    ".tools/py/bin/mcp-server-time",
    ".tools/py/bin/mcp-server-git",
    ".tools/sqlite/bin/mcp-server-sqlite",
]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _found(problems: list[SpecError]) -> dict[str, str]:
    return {p.field: p.problem for p in problems}


def test_only_the_placeholders_the_farm_fills_are_filled_and_the_rest_are_named() -> None:
    assert fill_placeholders("{python}:{port}:{env:X}:{nope}", {"python": "py"}) == (
        "py:{port}:{env:X}:{nope}"
    )
    assert unknown_placeholders(
        '{sandbx} {envv:HOME} {env:HOME} {"a": 1} {sandbox}', "command"
    ) == [
        "{sandbx}",
        "{envv:HOME}",
    ]
    assert unknown_placeholders("{sandboxes} {port}", "command") == ["{sandboxes}", "{port}"]
    assert unknown_placeholders("{sandboxes} {port}", "shared.command") == []


def test_the_pool_expands_the_shared_placeholders(tmp_path: Path) -> None:
    argv = ["{python}", "{root}/x", "{sandbox}", "{attached}", "{sandbx}"]
    assert [_expand(a, tmp_path, ["a", "b"]) for a in argv] == [
        sys.executable,
        f"{REPO_ROOT}/x",
        str(tmp_path),
        "a,b",
        "{sandbx}",
    ]


def test_an_unknown_placeholder_in_a_server_is_named_with_its_server_field_and_line(
    tmp_path: Path,
) -> None:
    _suite, problems = check_file(_write(tmp_path, "p.yaml", PLACEHOLDERS))
    found = {p.field: p for p in problems}
    assert set(found) == {
        "servers[0].command[4]",
        "servers[0].command[6]",
        "servers[0].command[10]",
        "servers[0].env.WHERE",
    }
    sandbx = found["servers[0].command[4]"]
    assert "server 'mine': {sandbx} is not a placeholder" in sandbx.problem
    assert "did you mean {sandbox}?" in sandbx.problem
    assert sandbx.line == 4
    assert str(sandbx).startswith(f"{tmp_path / 'p.yaml'}:4: servers[0].command[4]: ")
    assert "{envv:HOME}" in found["servers[0].command[6]"].problem
    assert "{attach}" in found["servers[0].env.WHERE"].problem
    assert found["servers[0].env.WHERE"].line == 6


def test_every_tool_a_scenario_names_must_be_listed_by_its_servers() -> None:
    suite = Suite.model_validate(
        {
            "suite": "t",
            "scenarios": [
                {
                    "id": "a",
                    "version": 1,
                    "tier": "simple",
                    "prompt": "hi",
                    "servers": ["fs", "down"],
                    "expect": [{"tool": "read", "server": "fs", "params": {"p": {"keys": {}}}}],
                },
                {
                    "id": "b",
                    "version": 1,
                    "tier": "simple",
                    "prompt": "hi",
                    "servers": ["fs"],
                    "setup": [{"tool": "sed"}],
                    "expect": [
                        {
                            "tool": {"one_of": ["read", {"name": "raed", "params": {}}]},
                            "params": {"p": {"items": {"keys": {"k": {"contains": 1}}}}},
                        }
                    ],
                    "allowed_extra": ["peek"],
                },
            ],
        }
    )
    schema = {
        "type": "object",
        "properties": {
            "p": {
                "type": "array",
                "items": {"type": "object", "properties": {"k": {"type": "string"}}},
            }
        },
    }
    tools: ToolSchemas = {"fs": {"read": schema, "seed": {}}}
    found = _found(tool_problems(suite, "t.yaml", tools))
    assert found == {
        "scenarios[0].expect[0].params.p": (
            "`keys` judges an object, but read's input schema types p as array: "
            "no call could meet it"
        ),
        "scenarios[1].setup[0].tool": "'sed' is not a tool of fs; did you mean 'seed'?",
        "scenarios[1].expect[0].tool.one_of[1]": "'raed' is not a tool of fs; did you mean 'read'?",
        "scenarios[1].expect[0].params.p.items.keys.k": (
            "`contains` judges an array, but read's input schema types p.items.keys.k as "
            "string: no call could meet it"
        ),
        "scenarios[1].allowed_extra[0]": "'peek' is not a tool of fs, which lists: read, seed",
    }


def test_an_example_that_breaks_its_own_matcher_is_named(
    settings: Settings, tmp_path: Path
) -> None:
    path = _write(tmp_path, "calls.yaml", CALLS)
    suite, _ = check_file(path)
    assert suite is not None
    request = CallCheckRequest(
        suites=[SuiteToCheck(source=str(path), suite=suite)], start_servers=False
    )
    result = check_calls(request, settings)
    # The chained value of routes[1].expect[1] is not judged: no result is at hand.
    assert [(p.field, p.problem) for p in result.problems] == [
        (
            "scenarios[1].routes[0].expect[0].example.path",
            "breaks the step's own matcher: path: '/Documents' does not match //?Desktop/?/",
        ),
        (
            "scenarios[1].routes[1].expect[0].example",
            "leaves out 'pattern', which the step's matcher requires",
        ),
    ]
    assert result.servers_started == 0


def _validate(*args: str | Path) -> Result:
    # A COLUMNS set where the tests run (a CI log at 80) would fold a long path mid-line.
    args_ = ["scenarios", "validate", *map(str, args)]
    return CliRunner().invoke(app, args_, env={"COLUMNS": "400"})  # one problem per line


def test_validate_starts_the_servers_and_reports_every_problem_with_its_line(
    tmp_path: Path,
) -> None:
    calls = _write(tmp_path, "calls.yaml", CALLS)
    result = _validate(calls, "--data-dir", tmp_path / "data")
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    for expected in (
        f"{calls}:9: scenarios[0].setup[0].tool: 'seed_files' is not a tool of filesystem",
        f"{calls}:11: scenarios[0].expect[0].tool: 'read_fil' is not a tool of filesystem; "
        "did you mean 'read_file'",
        f"{calls}:14: scenarios[0].expect[1].tool.one_of[1]: 'fetch_file' is not a tool",
        f"{calls}:15: scenarios[0].expect[1].params.path: `contains` judges an array, but "
        "read_file's input schema types path as string",
        f"{calls}:17: scenarios[0].allowed_extra[1]: 'peek' is not a tool of filesystem",
        f"{calls}:28: scenarios[1].routes[0].expect[0].example.path: breaks the step's own",
        f"{calls}:35: scenarios[1].routes[1].expect[0].example: leaves out 'pattern'",
    ):
        assert any(expected in line for line in lines), (expected, result.output)
    assert "7 problem(s) in 1 file(s)" in result.output
    assert "Traceback" not in result.output


def test_no_servers_leaves_the_tool_lists_unchecked(tmp_path: Path) -> None:
    result = _validate(_write(tmp_path, "calls.yaml", CALLS), "--no-servers")
    assert result.exit_code == 1, result.output
    assert "is not a tool" not in result.output
    assert "2 problem(s) in 1 file(s)" in result.output


def test_a_server_that_cannot_start_is_one_problem_that_says_what_to_do(tmp_path: Path) -> None:
    first = _write(tmp_path, "a.yaml", BROKEN_SERVERS)
    second = _write(tmp_path, "b.yaml", BROKEN_SERVERS.replace("suite: broken", "suite: again"))
    result = _validate(first, second, "--data-dir", tmp_path / "data")
    assert result.exit_code == 1, result.output
    out = result.output
    assert "Traceback" not in out
    assert f"{first}:3: servers[0]: server 'gone' is not installed here" in out
    assert "`bash scripts/setup.sh --dev` installs the third-party servers" in out
    assert f"{first}:5: servers[1]: MCP server 'broken' failed to start: FileNotFoundError" in out
    assert f"{first}:7: servers[2]: MCP server 'dies' failed to start" in out
    assert "pass --no-servers" in out
    # Each definition is started and reported once, though both files define it.
    assert "6 problem(s) in 2 file(s)" not in out and "3 problem(s) in 2 file(s)" in out


def test_a_catalogue_servers_unknown_placeholder_is_named_in_the_catalogue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalogue = _write(
        tmp_path,
        "servers.yaml",
        "servers:\n"
        "  - name: search\n"
        '    command: ["{python}", "-m", "mcp_farm.scenarios.servers.search", "{rooot}"]\n',
    )
    monkeypatch.setattr(validate, "SERVERS_FILE", catalogue)
    monkeypatch.setattr(validate, "server_catalog", lambda: _catalogue(catalogue))
    suite = "suite: s\nscenarios:\n  - {id: a, version: 1, tier: simple, prompt: hi, servers: [search]}\n"
    _suite, problems = check_file(_write(tmp_path, "s.yaml", suite))
    assert [(p.source, p.line, p.field) for p in problems] == [
        (str(catalogue), 3, "servers[0].command[3]")
    ]
    assert "{rooot} is not a placeholder" in problems[0].problem
    assert "did you mean {root}?" in problems[0].problem


def _catalogue(path: Path) -> dict[str, ServerDef]:
    return {s.name: s for s in load_yaml_model(ServerCatalog, path).servers}


def test_the_bundled_suites_name_only_tools_their_servers_list(tmp_path: Path) -> None:
    missing = [p for p in THIRD_PARTY if not (REPO_ROOT / p).exists()]
    if missing:
        message = (
            f"third-party servers not installed ({', '.join(missing)}): bash scripts/setup.sh --dev"
        )
        if os.environ.get("CI") == "true":  # CI must run it, never skip it
            pytest.fail(message)
        pytest.skip(message)
    result = _validate("--data-dir", tmp_path / "data")
    assert result.exit_code == 0, result.output
    assert "ok: " in result.output


CASSETTE = """\
cassette: 1
server: notes
tools:
  - name: read_note
    input_schema: {type: object, properties: {note_id: {type: string}}}
calls:
  - tool: read_note
    arguments: {note_id: groceries}
    answers:
      - content: [{type: text, text: "- red lentils"}]
"""

REPLAYED = """\
suite: replayed
servers:
  - name: notes
    replay: notes.yaml
    transport: TRANSPORT
scenarios:
  - id: taped.read
    version: 1
    tier: simple
    prompt: What is on my groceries note?
    servers: [notes]
    expect:
      - tool: read_nte
        params: {note_id: groceries}
        example: {note_id: groceries}
"""

VALIDATE_LIMIT_S = 240
"""How long a validate run may take before the test calls it hung (it starts one server)."""


def _validate_process(tmp_path: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """`farm scenarios validate` in a process of its own, killed if it outlives the limit."""
    return farm_cli(
        ["scenarios", "validate", *map(str, args), "--data-dir", str(tmp_path / "data")],
        timeout=VALIDATE_LIMIT_S,
        cwd=REPO_ROOT,
        env={**os.environ, "COLUMNS": "400"},  # one problem per line
    )


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_validate_lists_a_cassettes_tools_over_either_transport_and_returns(
    tmp_path: Path, transport: str
) -> None:
    _write(tmp_path, "notes.yaml", CASSETTE)
    suite = _write(tmp_path, "s.yaml", REPLAYED.replace("TRANSPORT", transport))
    done = _validate_process(tmp_path, suite)  # raises TimeoutExpired if it hangs
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        f"{suite}:13: scenarios[0].expect[0].tool: 'read_nte' is not a tool of notes; "
        "did you mean 'read_note'?" in done.stdout
    ), done.stdout
    assert "1 problem(s) in 1 file(s)" in done.stdout


BACKTRACKING = (
    """\
suite: backtracking
scenarios:
"""
    + "".join(
        f"""  - id: s{i}
    version: 1
    tier: simple
    prompt: Say a{i}.
    servers: [filesystem]
    final_answer: '{pattern}'
    example_answer: '{"a" * 60}!'
"""
        for i, pattern in enumerate(["(a|aa)+$", "(a|a)*$", "(.*a){12}$", "(a|a?)+$"])
    )
    + f"""  - id: asks
    version: 1
    tier: simple
    servers: [filesystem]
    turns:
      - user: Say something.
        must_ask: ['(a|aa)+\\?$']
        example_answer: '{"a" * 60}!?'
      - user: Say a.
        final_answer: 'a'
        example_answer: 'a'
"""
)


def test_validate_matches_example_answers_within_the_budget_and_names_the_pattern(
    tmp_path: Path,
) -> None:
    # Patterns the load check lets through; Python's `re` would backtrack on these for longer
    # than anyone waits.
    suite = _write(tmp_path, "b.yaml", BACKTRACKING)
    done = _validate_process(tmp_path, suite, "--no-servers")  # TimeoutExpired if it hangs
    lines = done.stdout.splitlines()
    for i, line in ((0, 8), (1, 15)):
        assert f"{suite}:{line}: scenarios[{i}].final_answer: final_answer /" in done.stdout, (
            done.stdout
        )
    assert (
        sum("ran past its 1 s budget on 61 characters (its example_answer)" in x for x in lines)
        == 2
    )
    assert f"{suite}:23: scenarios[2].example_answer: does not match final_answer" in done.stdout
    # A must-ask turn's patterns against its example question, within the same budget.
    assert (
        f"{suite}:37: scenarios[4].turns[0].must_ask[0]: must_ask /(a|aa)+\\?$/ ran past its "
        "1 s budget on 62 characters (its example_answer)" in done.stdout
    ), done.stdout
    assert "4 problem(s) in 1 file(s)" in done.stdout, done.stdout


ASKS = """\
suite: asks
scenarios:
  - id: asks
    version: 1
    tier: simple
    servers: [filesystem]
    turns:
      - user: Say something.
        must_ask: ['which file', 'what name']
        example_answer: 'ASKED'
      - user: Say a.
        final_answer: 'a'
        example_answer: 'a'
"""


@pytest.mark.parametrize(
    ("asked", "fits"),
    [
        ("What name should it have?", True),  # the second pattern, case-insensitive
        ("What name should it have.", False),  # no question mark
        ("Shall I go on?", False),  # a question no pattern matches
    ],
)
def test_a_must_ask_example_must_be_a_question_one_of_its_patterns_matches(
    tmp_path: Path, asked: str, fits: bool
) -> None:
    path = _write(tmp_path, "a.yaml", ASKS.replace("ASKED", asked))
    _suite, problems = check_file(path)
    assert [p.field for p in problems] == ([] if fits else ["scenarios[0].turns[0].example_answer"])


SCHEMA_AND_MORE = """\
suite: mixed
servers:
  - name: broken
    command: 5
  - name: mine
    command: ["{python}", "-m", "x", "{sandbx}"]
scenarios:
  - id: a
    version: 1
    tier: simple
    prompt: Find the file.
    paraphrases:
      - Find: the file
    servers: [filesystem]
    tgas: [x]
    expect:
      - tool: {one_of: [read_file, {name: read_text_file, params: {path: {regx: a}}}]}
        params: {path: {exact: a}}
        example: {path: a}
  - id: a
    version: 1
    tier: simple
    prompt: Say hi.
    servers: [nope]
    final_answer: hello
    example_answer: goodbye
"""


def test_a_schema_error_hides_none_of_the_files_other_problems(tmp_path: Path) -> None:
    path = _write(tmp_path, "mixed.yaml", SCHEMA_AND_MORE)
    suite, problems = check_file(path)
    assert suite is None  # the file as written does not load
    found = {(p.line, p.field) for p in problems}
    assert {
        (4, "servers[0].command"),
        (13, "scenarios[0].paraphrases[0]"),
        (15, "scenarios[0].tgas"),
        (17, "scenarios[0].expect[0].tool.one_of[1].params.path.regx"),
        # Found on what parsed, numbered as in the file:
        (6, "servers[1].command[3]"),
        (20, "scenarios[1].id"),
        (24, "scenarios[1].servers[0]"),
        (26, "scenarios[1].example_answer"),
    } <= found, problems
    # Nothing about what was taken out to parse the rest (server 0 without its command).
    assert not [p for p in problems if "needs `command`" in p.problem]


def test_a_colon_in_unquoted_text_is_named_as_the_mapping_it_became(tmp_path: Path) -> None:
    _suite, problems = check_file(_write(tmp_path, "mixed.yaml", SCHEMA_AND_MORE))
    said = next(p.problem for p in problems if p.field == "scenarios[0].paraphrases[0]")
    assert "got the mapping {'Find': 'the file'}" in said
    assert "YAML reads a `: ` in unquoted text as a key" in said
    assert "quote the text, as in 'Find: the file'" in said


def test_validate_checks_examples_on_what_parsed_of_a_file_with_schema_errors(
    tmp_path: Path,
) -> None:
    broken = CALLS.replace("    allowed_extra: [list_directory, peek]\n", "    alowed: []\n")
    path = _write(tmp_path, "calls.yaml", broken)
    result = _validate(path, "--no-servers")
    assert f"{path}:17: scenarios[0].alowed: Extra inputs are not permitted" in result.output
    # The workers' example checks still ran, on the scenario that parsed.
    assert f"{path}:28: scenarios[1].routes[0].expect[0].example.path" in result.output
    assert "3 problem(s) in 1 file(s)" in result.output, result.output


NOISY_SERVER = """\
import sys
sys.path.insert(0, {root!r})
print("Starting up... 3 plugins loaded", flush=True)
print("{{not json", flush=True)
from tests.servers.memo import build
build().run("stdio")
"""

NOISY_SUITE = """\
suite: noisy
servers:
  - name: chatty
    command: ["{python}", "NOISY"]
scenarios:
  - id: a
    version: 1
    tier: simple
    prompt: List my memos.
    servers: [chatty]
    expect:
      - tool: list_notes
        example: {}
"""


def test_a_server_printing_stray_lines_on_stdout_is_one_line_not_a_traceback(
    tmp_path: Path,
) -> None:
    server = _write(tmp_path, "noisy.py", NOISY_SERVER.format(root=str(REPO_ROOT)))
    suite = _write(tmp_path, "s.yaml", NOISY_SUITE.replace("NOISY", str(server)))
    done = _validate_process(tmp_path, suite)
    out = done.stdout + done.stderr
    assert "Traceback" not in out and "Failed to parse" not in out, out
    noted = [line for line in out.splitlines() if "not MCP messages" in line]
    assert noted == [
        f"! {suite}:3: servers[0]: server 'chatty' works, but it wrote 2 line(s) to stdout "
        "that are not MCP messages (the first: 'Starting up... 3 plugins loaded'); a stdio "
        "server must write only MCP messages there and log to stderr"
    ]
    assert done.returncode == 0, out  # a note: the suite itself is right
