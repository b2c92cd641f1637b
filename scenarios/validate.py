"""Check suite files and report every problem at once (`farm scenarios validate`).

Loading a suite for a sweep stops at the first error; a person fixing a file wants all of them:
schema errors, duplicate ids, unknown servers, chained arguments that point forward, examples
that do not match their own answer pattern, tools never given an example, answer citations
that do not exist in the suite's pinned tree, and placeholders in server definitions that the
farm does not fill in. Each problem names its line where the file has the field.

What needs the workers' code (the steps' matchers, started servers) is checked by the task
`farm.check_calls`, which checks the tools' names and schemas with `tool_checks`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from mcp_farm.scenarios.catalog import (
    FIXTURES_DIR,
    SERVERS_FILE,
    SUITES_DIR,
    is_file,
    server_catalog,
    structural_problems,
    with_sandbox_paths,
)
from mcp_farm.schema import (
    FILLED_BY_FIELD,
    Scenario,
    ServerDef,
    SpecError,
    Suite,
    read_yaml,
    spec_errors,
    unknown_placeholders,
    with_lines,
)


def suite_files(paths: Iterable[Path]) -> list[Path]:
    """The YAML files named, or found under the folders named; the bundled suites by default."""
    given = list(paths) or [SUITES_DIR]
    found: list[Path] = []
    for path in given:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.y*ml") if p.suffix in (".yaml", ".yml"))
        else:
            found.append(path)
    return found


def _lint_problems(suite: Suite, source: str) -> list[SpecError]:
    """What a suite can run with but should not ship with (the self-checks rely on these)."""
    problems: list[SpecError] = []
    for i, scenario in enumerate(suite.scenarios):
        where = f"scenarios[{i}]"
        for at, steps in scenario.step_lists():
            for j, call in enumerate(steps):
                if call.example is None:
                    problems.append(
                        SpecError(
                            source,
                            f"{where}.{at}[{j}].example",
                            "missing: the self-checks replay it as the ideal agent's call",
                        )
                    )
        found: list[SpecError] = []
        for k, (_name, way) in enumerate(scenario.ways()):
            own = scenario.routes and (
                scenario.routes[k].final_answer or scenario.routes[k].example_answer
            )
            route = f"routes[{k}]." if own else ""
            found += [
                p
                for p in _answer_example_problems(way, f"{where}.{route}", source)
                if str(p) not in map(str, found)
            ]
        problems += found
        problems += _turn_problems(scenario, where, source)
        wordings = [scenario.prompt or "", *scenario.paraphrases]
        if len({w.strip().lower() for w in wordings}) < len(wordings):
            problems.append(
                SpecError(source, f"{where}.paraphrases", "repeats the prompt or each other")
            )
    return problems


def _turn_problems(scenario: Scenario, where: str, source: str) -> list[SpecError]:
    """A conversation's turns: each turn's answer pattern against its example answer, and a
    turn that must ask needs an example question that asks (the self-checks reply with it)."""
    problems: list[SpecError] = []
    for i, turn in enumerate(scenario.turns):
        at = f"{where}.turns[{i}]."
        if not turn.must_ask:
            problems += _answer_example_problems(scenario.turn_scenario(i), at, source)
            continue
        asked = turn.example_answer or ""
        if "?" not in asked or not any(re.search(p, asked, re.IGNORECASE) for p in turn.must_ask):
            problems.append(
                SpecError(source, f"{at}example_answer", "must be a question that must_ask matches")
            )
    return problems


def _answer_example_problems(way: Scenario, where: str, source: str) -> list[SpecError]:
    """An answer pattern needs an example answer that it matches."""
    if not way.final_answer:
        return []
    pattern = re.compile(way.final_answer, re.IGNORECASE)  # compiled at load already
    if way.example_answer is None:
        return [SpecError(source, f"{where}example_answer", "missing")]
    if not pattern.search(way.example_answer):
        return [
            SpecError(
                source,
                f"{where}example_answer",
                f"does not match final_answer /{way.final_answer}/",
            )
        ]
    return []


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):  # a name the OS refuses (too long, an embedded NUL)
        return False


CITATION = re.compile(r"^(?P<path>[^:#\s]+)(?::(?P<start>\d+)(?:-(?P<end>\d+))?)?$")


def _citation_problem(tree: Path, cited: str) -> str | None:
    """Why a citation an answer spec lists does not exist in the pinned tree, if it does not."""
    m = CITATION.match(cited)
    if m is None:
        return f"{cited!r} is not `path`, `path:line` or `path:start-end`"
    path = tree / m.group("path")
    if ".." in Path(m.group("path")).parts or not is_file(path):
        return f"{m.group('path')} is not in {tree.relative_to(FIXTURES_DIR)}"
    lines = len(path.read_text(encoding="utf-8", errors="replace").splitlines())
    try:
        start = int(m.group("start") or 1)
        end = int(m.group("end") or start)
    except ValueError:  # more digits than Python converts: past the end of any file
        return f"{cited}: lines must lie in 1..{lines}"
    if not 1 <= start <= end <= lines:
        return f"{cited}: lines must lie in 1..{lines}"
    return None


def _answer_problems(suite: Suite, source: str) -> list[SpecError]:
    """The citations answer specs list must exist in the suite's pinned tree: the self-checks
    and the judge's reference both lean on them."""
    if suite.repo is None:
        return []
    tree = FIXTURES_DIR / suite.repo.fixture
    if not _is_dir(tree):
        return [SpecError(source, "repo.fixture", f"no folder {tree}")]
    problems = []
    for i, scenario in enumerate(suite.scenarios):
        for j, cited in enumerate(scenario.answer.citations if scenario.answer else []):
            problem = _citation_problem(tree, cited)
            if problem:
                field = f"scenarios[{i}].answer.citations[{j}]"
                problems.append(SpecError(source, field, problem))
    return problems


def _texts(server: ServerDef) -> list[tuple[str, str, str]]:
    """(field, FILLED_BY_FIELD key, text) for every text of `server` that may hold placeholders."""
    texts = [(f"command[{k}]", "command", a) for k, a in enumerate(server.command or [])]
    texts += [(f"env.{k}", "env", v) for k, v in server.env.items()]
    texts += [("url", "url", server.url)] if server.url else []
    if server.shared is not None:
        shared = server.shared
        texts += [
            (f"shared.command[{k}]", "shared.command", a) for k, a in enumerate(shared.command)
        ]
        texts += [("shared.url", "shared.url", shared.url)]
        texts += [(f"shared.headers.{k}", "shared.headers", v) for k, v in shared.headers.items()]
    return texts


def _placeholder_problems(server: ServerDef, source: str, where: str) -> list[SpecError]:
    """Each `{...}` in the server's definition that the farm does not fill in there: it would
    reach the server as written. `where` is the server's field (`servers[2]`)."""
    problems = []
    for field, kind, text in _texts(server):
        known = [f"{{{name}}}" for name in sorted(FILLED_BY_FIELD[kind])] + ["{env:VAR}"]
        for written in unknown_placeholders(text, kind):
            close = difflib.get_close_matches(written, known, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            problems.append(
                SpecError(
                    source,
                    f"{where}.{field}",
                    f"server {server.name!r}: {written} is not a placeholder the farm fills in "
                    f"here, so the server would get it as written ({hint}known: {', '.join(known)})",
                )
            )
    return problems


def _server_problems(suite: Suite, source: str) -> list[SpecError]:
    """Placeholder problems of the suite's own servers and of the catalogue servers its
    scenarios attach (those named in the catalogue's file)."""
    problems = []
    for i, server in enumerate(suite.servers):
        problems += _placeholder_problems(server, source, f"servers[{i}]")
    own = {s.name for s in suite.servers}
    attached = {name for s in suite.scenarios for name in s.servers}
    for i, (name, server) in enumerate(server_catalog().items()):
        if name in attached - own:
            problems += _placeholder_problems(server, str(SERVERS_FILE), f"servers[{i}]")
    return problems


def check_file(path: Path) -> tuple[Suite | None, list[SpecError]]:
    """The parsed suite (None if it does not parse) and every problem found in it that needs
    no server started and no matcher applied, each with its line where the file has it."""
    source = str(path)
    try:
        data = read_yaml(path)
    except SpecError as exc:
        return None, [exc]
    if not isinstance(data, dict):
        return None, [SpecError(source, "", "expected a mapping at the top")]
    try:
        suite = with_sandbox_paths(Suite.model_validate(data), path)
    except ValidationError as exc:
        return None, with_lines(spec_errors(exc, source))
    problems = structural_problems(suite, source) + _lint_problems(suite, source)
    problems += _answer_problems(suite, source) + _server_problems(suite, source)
    return suite, with_lines(problems)
