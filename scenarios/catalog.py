"""Find and load scenarios, prompt configurations and server definitions, strictly."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from mcp_farm.scenarios.cassette.launch import probe_refusal
from mcp_farm.scenarios.cassette.tape import load_cassette
from mcp_farm.schema import (
    PromptConfig,
    Rubric,
    Scenario,
    ScenarioSelection,
    ServerCatalog,
    ServerDef,
    SpecError,
    Suite,
    load_yaml_model,
    order_problems,
)
from mcp_farm.schema.specs import SELECTION_VERSION

ROOT = Path(__file__).resolve().parent
SUITES_DIR = ROOT / "suites"
PROMPTS_DIR = ROOT / "prompts"
RUBRICS_DIR = ROOT / "rubrics"
FIXTURES_DIR = ROOT / "fixtures"
SERVERS_FILE = ROOT / "servers.yaml"


class ScenarioError(SpecError):
    """A scenario, prompt or server reference that cannot be resolved."""


def is_file(path: Path) -> bool:
    """Whether `path` is a file; a name the OS refuses (too long, an embedded NUL) names none.

    `Path.exists` raises on a name too long for the filesystem, and ids that become file names
    come from user-written YAML.
    """
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def suite_path(name: str) -> Path:
    """A suite by name (`basic` → scenarios/suites/basic.yaml) or by file path."""
    as_path = Path(name)
    if as_path.suffix in (".yaml", ".yml"):
        return as_path
    return SUITES_DIR / f"{name}.yaml"


def load_suite(name: str) -> Suite:
    """A suite, parsed and checked once per version of its file (every trial looks it up)."""
    path = suite_path(name)
    try:
        stamp = path.stat().st_mtime_ns
    except FileNotFoundError:
        if path.is_absolute() or path.parent == SUITES_DIR:
            stamp = -1  # let the loader report the missing file with its path
        else:
            # A sweep's `suites:` path is not read beside the sweep file, unlike `sandbox: ./…`:
            # say from where it was read, so the fix is plain.
            raise ScenarioError(
                name,
                "",
                f"file not found: a suite path is read from the working folder ({Path.cwd()}), "
                "not from the sweep file's folder; give it from the working folder or as an "
                "absolute path",
            ) from None
    except (OSError, ValueError):
        stamp = -1  # let the loader report the unusable path with its path
    return _load_suite(path, stamp)


@lru_cache(maxsize=32)
def _load_suite(path: Path, _stamp: int) -> Suite:
    suite = with_suite_grading(with_sandbox_paths(load_yaml_model(Suite, path), path))
    problems = structural_problems(suite, str(path))
    if problems:
        raise problems[0]
    return suite


RELATIVE = ("./", "../")
"""How a `sandbox:` says it is a path beside the file that defines it, not a fixture name."""


def _resolved(server: ServerDef, base: Path) -> ServerDef:
    if server.replay is not None:
        # A cassette is always a path: relative ones are beside the defining file.
        return server.model_copy(update={"replay": str((base / server.replay).resolve())})
    if server.sandbox is None or not server.sandbox.startswith(RELATIVE):
        return server
    return server.model_copy(update={"sandbox": str((base / server.sandbox).resolve())})


def with_sandbox_paths(suite: Suite, path: Path) -> Suite:
    """The suite with each relative `sandbox:` and `replay:` path made absolute against the
    suite file's folder, so a worker finds it whatever its working folder."""
    base = path.resolve().parent
    return suite.model_copy(update={"servers": [_resolved(s, base) for s in suite.servers]})


def with_suite_grading(suite: Suite) -> Suite:
    """The suite with its `grade_by` given to each scenario that has probes and no
    `grade_by` of its own (a scenario without probes is graded by its calls)."""
    if suite.grade_by is None:
        return suite
    scenarios = [
        s.model_copy(update={"grade_by": suite.grade_by}) if s.probes and s.grade_by is None else s
        for s in suite.scenarios
    ]
    return suite.model_copy(update={"scenarios": scenarios})


def _probe_problems(
    i: int, scenario: Scenario, servers: dict[str, ServerDef], source: str
) -> list[SpecError]:
    """Probes that name a server the scenario does not attach, leave the server out where it
    attaches several (a read call may: one server lists the tool), look in a sandbox the
    server does not have, or look at a server served from its cassette (`replay:`)."""
    problems: list[SpecError] = []
    places = [(f"turns[{t}].state", turn.state) for t, turn in enumerate(scenario.turns)]
    for at, probes in [*places, ("state", scenario.state)]:
        for k, probe in enumerate(probes):
            field = f"scenarios[{i}].{at}[{k}]"
            name_ = probe.server
            if name_ is None and len(scenario.servers) == 1:
                name_ = scenario.servers[0]
            if name_ is None:
                if probe.kind != "call":
                    problems.append(ScenarioError(source, field, "name the `server` to look at"))
                continue
            if name_ not in scenario.servers:
                problems.append(
                    ScenarioError(source, f"{field}.server", f"{name_!r} is not attached")
                )
                continue
            found = servers.get(name_)
            if found is not None and found.replay is not None:
                problems.append(ScenarioError(source, field, probe_refusal(name_, probe.kind)))
            elif probe.kind in ("file", "sqlite") and found is not None and found.sandbox is None:
                problems.append(
                    ScenarioError(source, field, f"server {name_!r} has no sandbox to look in")
                )
    return problems


def sandbox_source(server: ServerDef) -> Path | None:
    """The folder a server's sandbox is copied from: a fixture by name, or the (already
    resolved) absolute path the definition gives."""
    if server.sandbox is None:
        return None
    return FIXTURES_DIR / server.sandbox  # an absolute path replaces the base


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):  # a name the OS refuses (too long, an embedded NUL)
        return False


def _server_problems(suite: Suite, source: str) -> list[SpecError]:
    """Sandbox folders that do not exist and cassettes that cannot be served (checked where
    the suite is loaded: every worker that runs its trials needs the same files)."""
    problems: list[SpecError] = []
    for i, server in enumerate(suite.servers):
        missing = server.record == "new_episodes" and not Path(server.replay or "").exists()
        if server.replay is not None and not missing:  # a recording begins the file
            try:
                load_cassette(Path(server.replay))
            except SpecError as exc:
                problems.append(ScenarioError(source, f"servers[{i}].replay", str(exc)))
        folder = sandbox_source(server)
        if folder is not None and not _is_dir(folder):
            problems.append(
                ScenarioError(
                    source,
                    f"servers[{i}].sandbox",
                    f"no folder {folder} (a name under {FIXTURES_DIR}, an absolute path, or "
                    "./path relative to this file)",
                )
            )
    return problems


def _setup_problems(
    i: int, scenario: Scenario, servers: dict[str, ServerDef], source: str
) -> list[SpecError]:
    """A setup call must say which attached server it seeds, and that server must be one the
    farm can give the next trial fresh: state seeded into a warm server would leak into it."""
    problems: list[SpecError] = []
    for k, call in enumerate(scenario.setup):
        where = f"scenarios[{i}].setup[{k}].server"
        target = call.server
        if target is None and len(scenario.servers) > 1:
            attached = ", ".join(scenario.servers)
            problems.append(
                ScenarioError(source, where, f"name the server: the scenario attaches {attached}")
            )
            continue
        target = target or scenario.servers[0]
        if target not in scenario.servers:
            problems.append(
                ScenarioError(
                    source,
                    where,
                    f"{target!r} is not attached to this scenario ({', '.join(scenario.servers)})",
                )
            )
            continue
        server = servers.get(target)
        problem = _unresettable(server) if server is not None else None
        if problem:
            problems.append(ScenarioError(source, where, f"setup seeds {target!r}, {problem}"))
    return problems


def _unresettable(server: ServerDef) -> str | None:
    """Why state seeded into `server` would reach the next trial, if it would: the farm must
    restart it, copy its sandbox back, or have its definition say how it is reset."""
    if server.reset is not None or server.sandbox is not None or server.replay is not None:
        return None  # a cassette keeps no state: each trial's session replays it afresh
    if server.transport == "http":
        return (
            "an HTTP server the farm does not start or restart, so the next trial would see "
            "the seeded state: give the server `reset: session` (if each MCP session starts "
            "clean) or `reset: {tool: ..., arguments: {...}}` (a call that clears it)"
        )
    if server.reuse:
        return (
            "which is kept running between trials with no sandbox to reset, so the next trial "
            "would see the seeded state: give the server `reuse: false` (a fresh process per "
            "trial), a `sandbox:` folder, or a `reset:`"
        )
    return None


def structural_problems(suite: Suite, source: str) -> list[SpecError]:
    """What makes a suite unusable: repeated ids, unknown servers, chains pointing forward,
    missing sandbox folders, setup calls that would leak into the next trial."""
    problems: list[SpecError] = _server_problems(suite, source)
    servers = {**server_catalog(), **{s.name: s for s in suite.servers}}
    seen: set[str] = set()
    for i, scenario in enumerate(suite.scenarios):
        if scenario.id in seen:
            problems.append(
                ScenarioError(
                    source, f"scenarios[{i}].id", f"duplicate scenario id {scenario.id!r}"
                )
            )
        seen.add(scenario.id)
        for j, name_ in enumerate(scenario.servers):
            if name_ not in servers:
                problems.append(
                    ScenarioError(
                        source,
                        f"scenarios[{i}].servers[{j}]",
                        f"unknown server {name_!r}; known: {', '.join(sorted(servers))}",
                    )
                )
        problems += _answer_problems(suite, i, scenario, source)
        problems += _setup_problems(i, scenario, servers, source)
        problems += _probe_problems(i, scenario, servers, source)
        for at, steps in scenario.step_lists():
            for field, problem in order_problems(steps, at):
                problems.append(ScenarioError(source, f"scenarios[{i}].{field}", problem))
    for i, toolset in enumerate(suite.toolsets):
        for j, name_ in enumerate(toolset.servers):
            if name_ not in servers:
                problems.append(
                    ScenarioError(
                        source, f"toolsets[{i}].servers[{j}]", f"unknown server {name_!r}"
                    )
                )
    if sum(t.baseline for t in suite.toolsets) > 1:
        problems.append(ScenarioError(source, "toolsets", "at most one tool set is the baseline"))
    return problems


def _answer_problems(suite: Suite, i: int, scenario: Scenario, source: str) -> list[SpecError]:
    """Tool-set scenarios must grade tools openly; answer scenarios need a rubric that exists."""
    where = f"scenarios[{i}]"
    problems: list[SpecError] = []
    if scenario.open_tools and scenario.expect:
        problems.append(
            ScenarioError(source, f"{where}.expect", "an open_tools scenario expects no call")
        )
    if suite.toolsets and not scenario.open_tools:
        problems.append(
            ScenarioError(
                source,
                f"{where}.open_tools",
                "a suite with tool sets swaps servers, so its scenarios must set open_tools: true",
            )
        )
    if scenario.answer is not None:
        rubric = scenario.answer.rubric or suite.rubric
        if rubric is None:
            problems.append(
                ScenarioError(source, f"{where}.answer.rubric", "no rubric (nor a suite rubric)")
            )
        elif not is_file(RUBRICS_DIR / f"{rubric}.yaml"):
            problems.append(
                ScenarioError(source, f"{where}.answer.rubric", f"unknown rubric {rubric!r}")
            )
    return problems


def find_scenario(suite: str, scenario_id: str, version: int | None = None) -> Scenario:
    """One scenario by id (and version, when given) from a suite."""
    for scenario in load_suite(suite).scenarios:
        if scenario.id == scenario_id:
            if version is not None and scenario.version != version:
                raise ScenarioError(
                    str(suite_path(suite)),
                    scenario_id,
                    f"asked for version {version}, the suite has version {scenario.version}",
                )
            return scenario
    raise ScenarioError(str(suite_path(suite)), "", f"no scenario with id {scenario_id!r}")


def select(selection: ScenarioSelection, source: str = "sweep") -> list[tuple[str, Scenario]]:
    """The (suite, scenario) pairs a sweep's selection picks, in suite order."""
    picked: list[tuple[str, Scenario]] = []
    for suite in selection.suites:
        for scenario in load_suite(suite).scenarios:
            if selection.tiers and scenario.tier not in selection.tiers:
                continue
            if selection.tags and not set(selection.tags) & set(scenario.tags):
                continue
            if selection.ids and scenario.id not in selection.ids:
                continue
            picked.append((suite, scenario))
    known = {s.id for _suite, s in picked}
    for i, wanted in enumerate(selection.ids):
        if wanted not in known:
            raise ScenarioError(source, f"scenarios.ids[{i}]", f"unknown scenario id {wanted!r}")
    if not picked:
        raise ScenarioError(source, "scenarios", "the selection matches no scenario")
    return picked


def load_prompt(prompt_id: str, source: str = "sweep", field: str = "prompts") -> PromptConfig:
    """A prompt configuration by id, from scenarios/prompts/<id>.yaml."""
    path = PROMPTS_DIR / f"{prompt_id}.yaml"
    if not is_file(path):
        known = ", ".join(sorted(p.stem for p in PROMPTS_DIR.glob("*.yaml")))
        raise ScenarioError(source, field, f"unknown prompt config {prompt_id!r}; known: {known}")
    prompt = load_yaml_model(PromptConfig, path)
    if prompt.id != prompt_id:
        raise ScenarioError(str(path), "id", f"must equal the file name {prompt_id!r}")
    if prompt.select is not None:
        # The farm's version of selection, so a change to it gives these trials new ids.
        select = prompt.select.model_copy(update={"version": SELECTION_VERSION})
        prompt = prompt.model_copy(update={"select": select})
    return prompt


def servers_for(suite: str) -> dict[str, ServerDef]:
    """The shared catalogue plus the suite's own servers, each with the suite's ignore rules
    added to its own."""
    loaded = load_suite(suite)
    found = {**server_catalog(), **{s.name: s for s in loaded.servers}}
    if not loaded.ignore:
        return found
    return {
        name: s.model_copy(update={"ignore": s.ignore.joined(loaded.ignore)})
        for name, s in found.items()
    }


@lru_cache(maxsize=1)
def server_catalog() -> dict[str, ServerDef]:
    """Every server a scenario may attach, by name."""
    catalog = load_yaml_model(ServerCatalog, SERVERS_FILE)
    base = SERVERS_FILE.resolve().parent
    return {server.name: _resolved(server, base) for server in catalog.servers}


def rubric_path(rubric_id: str) -> Path:
    return RUBRICS_DIR / f"{rubric_id}.yaml"


def load_rubric(rubric_id: str, source: str = "rubric") -> tuple[Rubric, str]:
    """A rubric by id and the sha256 of its file's bytes (what judgements and anchors record)."""
    path = rubric_path(rubric_id)
    if not is_file(path):
        known = ", ".join(sorted(p.stem for p in RUBRICS_DIR.glob("*.yaml")))
        raise ScenarioError(source, "rubric", f"unknown rubric {rubric_id!r}; known: {known}")
    rubric = load_yaml_model(Rubric, path)
    if rubric.id != rubric_id:
        raise ScenarioError(str(path), "id", f"must equal the file name {rubric_id!r}")
    return rubric, hashlib.sha256(path.read_bytes()).hexdigest()
