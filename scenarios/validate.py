"""Check suite files and report every problem at once (`farm scenarios validate`).

Loading a suite for a sweep stops at the first error; a person fixing a file wants all of them,
so a schema error does not stop the other checks (they run on what parses: schema/parse/salvage):
schema errors, duplicate ids, unknown servers, chained arguments that point forward, examples
that do not match their own answer pattern, tools never given an example, answer citations
that do not exist in the suite's pinned tree, placeholders in server definitions that the
farm does not fill in, and `sqlite:`/`file:` state probes whose path looks written wrong
against the server's sandbox template. Each problem names its line where the file has the field.

What needs the workers' code (the steps' matchers, started servers) is checked by the task
`farm.check_calls`, which checks the tools' names and schemas with `tool_checks`.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from mcp_farm.scenarios.catalog import (
    FIXTURES_DIR,
    SERVERS_FILE,
    SUITES_DIR,
    is_file,
    sandbox_source,
    server_catalog,
    structural_problems,
    with_sandbox_paths,
)
from mcp_farm.schema import (
    FILLED_BY_FIELD,
    ExpectedCall,
    PatternTimeout,
    Scenario,
    ServerDef,
    SpecError,
    Suite,
    ToolOption,
    budgeted_search,
    read_yaml,
    unknown_placeholders,
    with_lines,
)
from mcp_farm.schema.parse.salvage import Salvaged, salvage


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
                problems += _option_example_problems(call, f"{where}.{at}[{j}]", source)
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


def _option_example_problems(step: ExpectedCall, where: str, source: str) -> list[SpecError]:
    """An alternative judged by params of its own needs an example call of its own: the
    self-checks call it in the first tool's place (the first tool's is the step's `example`)."""
    options = () if isinstance(step.tool, str) else step.tool.one_of
    return [
        SpecError(
            source,
            f"{where}.tool.one_of[{n}].example",
            f"missing: the self-checks call {option.name} with it in place of {step.names[0]}",
        )
        for n, option in enumerate(options)
        if n and isinstance(option, ToolOption) and option.example is None  # 0: the step's
    ]


def _turn_problems(scenario: Scenario, where: str, source: str) -> list[SpecError]:
    """A conversation's turns: each turn's answer pattern against its example answer, and a
    turn that must ask needs an example question that asks (the self-checks reply with it)."""
    problems: list[SpecError] = []
    for i, turn in enumerate(scenario.turns):
        at = f"{where}.turns[{i}]."
        if not turn.must_ask:
            problems += _answer_example_problems(scenario.turn_scenario(i), at, source)
            continue
        problems += _asked_example_problems(turn.must_ask, turn.example_answer or "", at, source)
    return problems


def _asked_example_problems(
    must_ask: list[str], asked: str, at: str, source: str
) -> list[SpecError]:
    """A must-ask turn's example question has a question mark and matches one of `must_ask`.
    Every pattern is matched, within the budget: one that backtracks without end on the
    example is reported, not waited on."""
    problems: list[SpecError] = []
    matched = False
    for k, pattern in enumerate(must_ask):
        try:
            found = budgeted_search(pattern, asked, field="must_ask", flags=re.IGNORECASE)
        except PatternTimeout as exc:
            problems.append(SpecError(source, f"{at}must_ask[{k}]", f"{exc} (its example_answer)"))
            continue
        matched = matched or found is not None
    if not problems and ("?" not in asked or not matched):
        problems.append(
            SpecError(source, f"{at}example_answer", "must be a question that must_ask matches")
        )
    return problems


def _answer_example_problems(way: Scenario, where: str, source: str) -> list[SpecError]:
    """An answer pattern needs an example answer that it matches."""
    if not way.final_answer:
        return []
    if way.example_answer is None:
        return [SpecError(source, f"{where}example_answer", "missing")]
    try:
        # Within the budget every match of a scenario's pattern has: a pattern that
        # backtracks without end on its own example is reported, not waited on.
        found = budgeted_search(
            way.final_answer, way.example_answer, field="final_answer", flags=re.IGNORECASE
        )
    except PatternTimeout as exc:
        return [SpecError(source, f"{where}final_answer", f"{exc} (its example_answer)")]
    if found is None:
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


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name the OS refuses (too long, an embedded NUL)
        return False


def _probe_path_problems(suite: Suite, source: str) -> list[SpecError]:
    """`sqlite:` and `file:` probes whose path looks written wrong against the server's sandbox
    template: a folder on the way that the template lacks, or a name close to one it holds
    (`order.db` beside `orders.db`), where nothing the scenario expects makes it. A probe of a
    file that is not there finds nothing to read (a SQLite file: an infra_error at run time)
    or `null` (a file: judged as the model's). A name the template lacks in a folder it holds,
    close to nothing there, may be one the server or the model makes: not judged here."""
    servers = {**server_catalog(), **{s.name: s for s in suite.servers}}
    problems: list[SpecError] = []
    for i, scenario in enumerate(suite.scenarios):
        written = json.dumps(
            [step.example for step in scenario.all_steps]
            + [c.arguments for c in scenario.setup]
            + [t.trigger.arguments for t in scenario.turns if t.trigger is not None],
            ensure_ascii=False,
            default=str,
        )
        places = [(f"turns[{t}].state", turn.state) for t, turn in enumerate(scenario.turns)]
        for at, probes in [*places, ("state", scenario.state)]:
            for k, probe in enumerate(probes):
                path = probe.sqlite if probe.sqlite is not None else probe.file
                name = probe.server or (scenario.servers[0] if len(scenario.servers) == 1 else "")
                server = servers.get(name)
                folder = sandbox_source(server) if server is not None else None
                if path is None or folder is None or not _is_dir(folder):
                    continue  # no sandbox: a structural problem of its own
                problem = _template_problem(folder, path, written)
                if problem:
                    field = f"scenarios[{i}].{at}[{k}].{'sqlite' if probe.sqlite else 'file'}"
                    problems.append(
                        SpecError(source, field, f"state probe {probe.name}: {problem}")
                    )
    return problems


def _template_problem(folder: Path, path: str, written: str) -> str | None:
    """Why `path` (inside a sandbox made from `folder`) looks written wrong, if it does: its
    first part the template lacks is a folder on the way, or a name close to one the
    template holds, and no expected call, setup call or trigger names it."""
    parts = Path(path).parts
    missing = next(
        (n for n in range(len(parts)) if not _exists(folder.joinpath(*parts[: n + 1]))), None
    )
    if missing is None or parts[missing] in written:
        return None
    try:
        there = sorted(p.name for p in folder.joinpath(*parts[:missing]).iterdir())
    except OSError:
        there = []
    close = difflib.get_close_matches(parts[missing], there, n=3, cutoff=0.75)
    if missing == len(parts) - 1 and not close:
        return None  # a name the server or the model may make, in a folder that is there
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    shown = "/".join(parts[: missing + 1])
    return (
        f"the sandbox template {folder} holds no {shown!r}, and no expected call, setup call "
        f"or trigger names {parts[missing]!r}{hint}"
    )


SuiteCheck = Callable[[Suite, str], list[SpecError]]
"""One check of a parsed suite that needs no server and no matcher: (suite, source) →
problems. A new check is one more entry of CHECKS."""

CHECKS: tuple[SuiteCheck, ...] = (
    structural_problems,
    _lint_problems,
    _answer_problems,
    _server_problems,
    _probe_path_problems,
)


@dataclass
class FileCheck:
    """One suite file checked: what parsed, and every problem found without the workers."""

    path: Path
    suite: Suite | None
    """The suite, when the whole file parses; None otherwise."""
    checked: Suite | None
    """What of it parsed (the whole suite, or it with what failed taken out): every other
    check runs on this. None when nothing could be parsed."""
    problems: list[SpecError]
    """Every problem found, with its line."""
    salvaged: Salvaged[Suite] | None = None

    def own(self, problems: Iterable[SpecError]) -> list[SpecError]:
        """Problems that checks of `checked` found elsewhere (the workers' checks), numbered
        as in the file and with their lines."""
        if self.salvaged is None:
            return with_lines(problems)
        return with_lines(self.salvaged.later(problems, str(self.path)))


def check_parts(path: Path) -> FileCheck:
    """Check a suite file, every part of it that parses even when some do not."""
    source = str(path)
    try:
        data = read_yaml(path)
    except SpecError as exc:
        return FileCheck(path, None, None, [exc])
    if not isinstance(data, dict):
        return FileCheck(path, None, None, [SpecError(source, "", "expected a mapping at the top")])
    salvaged = salvage(Suite, data, source)
    checked = with_sandbox_paths(salvaged.parsed, path) if salvaged.parsed is not None else None
    found = [p for check in CHECKS for p in check(checked, source)] if checked else []
    problems = [*salvaged.errors, *salvaged.later(found, source)]
    suite = checked if salvaged.whole is not None else None
    return FileCheck(path, suite, checked, with_lines(problems), salvaged)


def check_file(path: Path) -> tuple[Suite | None, list[SpecError]]:
    """The parsed suite (None if it does not parse) and every problem found in it that needs
    no server started and no matcher applied, each with its line where the file has it."""
    checked = check_parts(path)
    return checked.suite, checked.problems
