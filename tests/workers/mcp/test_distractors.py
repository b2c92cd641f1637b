"""Distractors that do not announce themselves: nothing a trial shows the model tells a
distractor from a real tool; near-misses and twins are made of any attached server's tools;
every position is drawn; each expected tool's position is recorded (docs/robustness.md)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from sqlalchemy import text as sql

from mcp_farm.scenarios import load_prompt, load_suite, server_catalog, servers_for
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.schema import (
    ListPosition,
    Scenario,
    ScenarioSelection,
    ServerDef,
    Settings,
    SweepSpec,
    TrialSpec,
)
from mcp_farm.schema.specs import DISTRACTOR_SERVER, Names, ToolListAxes, ToolListLevel
from mcp_farm.workers.mcp.connections import Connected, connect, result_text
from mcp_farm.workers.mcp.pool import REPO_ROOT, ServerPool
from mcp_farm.workers.mcp.toollist import shape_tools
from mcp_farm.workers.model.encode import openai_tools, opening_messages, reply_schema
from mcp_farm.workers.model.toolspec import ToolSpec
from mcp_farm.workers.trial import execute_trial
from tests.helpers import ideal_script, run_sweep_embedded, scripted, trial

pytestmark = pytest.mark.integration
BASIC = {s.id: s for s in load_suite("basic").scenarios}
THIRD = {s.id: s for s in load_suite("thirdparty").scenarios}
TIME_TOOLS = REPO_ROOT / ".tools/py/bin/mcp-server-time"

TELLS = re.compile(
    r"distractor|other teams|farm/|near_miss|\b(?:mirror|near|gen)\.|\bother__", re.IGNORECASE
)
"""Words that name the distractors' server, family or catalogue, wherever they appear."""


@dataclass
class Shown:
    """What a trial at a level shows, and what it is made of."""

    tools: list[ToolSpec]
    instructions: dict[str, str]
    positions: list[ListPosition]


def _servers(scenario: Scenario, suite: str) -> list[ServerDef]:
    catalog = servers_for(suite)
    return [catalog[name] for name in scenario.servers] + [server_catalog()[DISTRACTOR_SERVER]]


T = TypeVar("T")


def _at_level(
    scenario: Scenario,
    suite: str,
    level: ToolListLevel,
    seed: int,
    root: Path,
    then: Callable[[Connected, list[ListPosition]], Awaitable[T]],
) -> T:
    """`then` on a trial's connection to its servers, shaped to `level`."""

    async def shaped() -> T:
        async with anyio.create_task_group() as tg:
            pool = ServerPool(tg, root, 30.0)
            try:
                async with connect(_servers(scenario, suite), pool, "plain") as conn:
                    expected = scenario.expected_tools
                    at = await shape_tools(conn, level, seed, scenario.id, expected)
                    got = await then(conn, at)
            finally:
                pool.close()
        return got

    return anyio.run(shaped)


def _shaped(scenario: Scenario, suite: str, level: ToolListLevel, seed: int, root: Path) -> Shown:
    async def shown(conn: Connected, at: list[ListPosition]) -> Shown:
        return Shown(list(conn.tools.values()), dict(conn.instructions), at)

    return _at_level(scenario, suite, level, seed, root, shown)


def _everything_shown(shown: Shown, user_prompt: str) -> list[str]:
    """Every text a trial shows the model, in every mode: the system text with its
    "About the servers" lines and (in text modes) the tool list, the native `tools` array,
    and the grammar's reply schema."""
    texts = [json.dumps(openai_tools(shown.tools)), json.dumps(reply_schema(shown.tools))]
    for mode in ("native", "json", "grammar"):
        prompt = load_prompt(mode)
        opening = opening_messages(prompt, user_prompt, shown.tools, shown.instructions)
        texts += [m.content for m in opening]
    return texts


def _common_phrases(texts: list[str], words: int = 4) -> Counter[str]:
    """How many of `texts` hold each run of `words` words (each text counted once)."""
    seen: Counter[str] = Counter()
    for text in texts:
        tokens = re.findall(r"[a-z0-9']+", text.lower())
        seen.update({" ".join(tokens[i : i + words]) for i in range(len(tokens) - words + 1)})
    return seen


def _tells(shown: Shown, user_prompt: str) -> list[str]:
    found = [m.group(0) for t in _everything_shown(shown, user_prompt) for m in TELLS.finditer(t)]
    if DISTRACTOR_SERVER in shown.instructions:
        found.append("a server line for the distractor server")
    # A phrase that many distractors share and no own tool has marks them as a family.
    theirs = [t.description for t in shown.tools if t.server == DISTRACTOR_SERVER]
    own = _common_phrases([t.description for t in shown.tools if t.server != DISTRACTOR_SERVER])
    common = _common_phrases(theirs)
    found += [
        f"{n} distractors say {phrase!r}"
        for phrase, n in common.items()
        if n >= max(5, len(theirs) * 0.15) and phrase not in own
    ]
    return found


@pytest.mark.parametrize("names", ["as_is", "namespaced", "colliding"])
def test_nothing_a_trial_shows_the_model_tells_a_distractor_from_a_real_tool(
    names: Names, tmp_path: Path
) -> None:
    scenario = BASIC["fs.read-todo"]
    shown = _shaped(scenario, "basic", ToolListLevel(tool_count=50, names=names), 1, tmp_path)
    assert len([t for t in shown.tools if t.server == DISTRACTOR_SERVER]) == 50
    assert _tells(shown, scenario.prompt_for(0)) == []


def _time_installed() -> None:
    if not TIME_TOOLS.exists():
        pytest.skip("the third-party servers are not installed: run `bash scripts/setup.sh --dev`")


def test_a_third_party_server_gets_near_misses_and_twins_within_the_count_and_no_tell(
    tmp_path: Path,
) -> None:
    _time_installed()
    scenario = THIRD["ref.time.now-tokyo"]
    level = ToolListLevel(tool_count=12, names="colliding")
    shown = _shaped(scenario, "thirdparty", level, 0, tmp_path)
    theirs = [t for t in shown.tools if t.server == DISTRACTOR_SERVER]
    assert len(theirs) == 12  # the twins count toward the level's count
    own = {t.tool for t in shown.tools if t.server == "ref-time"}
    made = [t for t in theirs if t.meta["farm/origin"] == "ref-time"]
    twins = {t.meta["farm/of"] for t in made if t.meta["farm/family"] == "mirror"}
    near = {t.meta["farm/of"] for t in made if t.meta["farm/family"] == "near_miss"}
    assert twins == own
    assert near and near <= own
    assert _tells(shown, scenario.prompt_for(0)) == []


def test_a_third_party_tools_near_miss_answers_and_refuses_a_missing_argument(
    settings: Settings, tmp_path: Path
) -> None:
    _time_installed()
    scenario = THIRD["ref.time.now-tokyo"]
    level = ToolListLevel(tool_count=4)
    shown = _shaped(scenario, "thirdparty", level, 0, tmp_path)
    near = next(t for t in shown.tools if t.tool.startswith("near.ref-time."))
    required = near.input_schema.get("required", [])
    assert required
    script: list[dict[str, Any]] = [
        {"call": {"name": near.shown_name, "arguments": {}}},
        {"call": {"name": near.shown_name, "arguments": dict.fromkeys(required, "Asia/Tokyo")}},
        {"answer": "none"},
    ]
    spec = trial(scenario, script, suite="thirdparty").model_copy(
        update={"tool_list": level, "trial_id": ""}
    )
    result = anyio.run(execute_trial, TrialSpec.model_validate(spec.model_dump()), settings)
    first, second = result.tool_calls
    assert (first.server, first.tool) == (DISTRACTOR_SERVER, near.tool)
    assert not first.ok and "missing required argument" in (first.error or "")
    assert second.ok and second.result_text


def test_positions_are_drawn_over_all_slots_and_either_twin_may_keep_the_bare_name(
    tmp_path: Path,
) -> None:
    scenario = BASIC["fs.list-desktop"]
    level = ToolListLevel(tool_count=10, names="colliding")
    bare_real, deciles = 0, set()
    for seed in range(12):
        shown = _shaped(scenario, "basic", level, seed, tmp_path / str(seed))
        real = next(
            t for t in shown.tools if t.server == "filesystem" and t.tool == "list_directory"
        )
        bare_real += real.shown_name == "list_directory"
        (at,) = shown.positions
        assert at.tool == "list_directory" and at.server == "filesystem"
        assert at.listed == len(shown.tools) and shown.tools[at.index or 0] == real
        deciles.add(at.decile())
    assert 0 < bare_real < 12
    assert len(deciles) >= 4


def test_a_trial_at_a_level_records_where_its_expected_tools_sat(settings: Settings) -> None:
    scenario = BASIC["fs.list-desktop"]
    spec = trial(scenario, ideal_script(scenario)).model_copy(
        update={"tool_list": ToolListLevel(tool_count=10), "trial_id": ""}
    )
    result = anyio.run(execute_trial, TrialSpec.model_validate(spec.model_dump()), settings)
    assert result.outcome == "pass", result.detail
    plain = trial(scenario, ideal_script(scenario))
    again = anyio.run(execute_trial, plain, settings)
    own = len(again.provenance.server_tools["filesystem"])
    (at,) = result.provenance.tool_positions or []
    assert (at.tool, at.server, at.listed) == ("list_directory", "filesystem", own + 10)
    assert at.index is not None and 0 <= at.index < own + 10
    assert again.provenance.tool_positions is None
    assert "tool_positions" not in again.provenance.model_dump(mode="json")


def test_a_distractors_answer_is_plain_text(tmp_path: Path) -> None:
    """A reading distractor finds nothing; another reports success without naming itself."""
    scenario = BASIC["fs.read-todo"]
    level = ToolListLevel(tool_count=20)

    async def answers(conn: Connected, _at: list[ListPosition]) -> list[str]:
        out = []
        for t in conn.tools.values():
            if t.server == DISTRACTOR_SERVER:
                args = dict.fromkeys(t.input_schema.get("required", []), "x")
                out.append(result_text(await conn.call(t.server, t.tool, args)))
        return out

    for text in _at_level(scenario, "basic", level, 0, tmp_path, answers):
        assert not TELLS.search(text), text


def test_a_third_party_sweep_with_colliding_names_records_positions_in_the_scorecard(
    settings: Settings,
) -> None:
    _time_installed()
    scenario = THIRD["ref.time.now-tokyo"]
    sweep = SweepSpec(
        name="collide",
        models=[scripted(ideal_script(scenario), "ideal")],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=["thirdparty"], ids=[scenario.id]),
        repetitions=3,
        paraphrases="verbatim",
        tool_list=ToolListAxes(tool_count=[50], names=["colliding"]),
    )
    engine, plan = run_sweep_embedded(sweep, settings)
    card = build_scorecard(engine=engine, sweep_id=plan.sweep_id)
    assert sum(d.n for d in card.positions) == 3
    with engine.connect() as conn:
        stored = conn.execute(
            sql("select transcript_json, provenance_json from trial where sweep_id = :s"),
            {"s": plan.sweep_id},
        ).all()
    for transcript, provenance in stored:
        system = json.loads(transcript)[0]["content"]
        assert not TELLS.search(system), system
        (at,) = json.loads(provenance)["tool_positions"]
        assert at["tool"] == scenario.expected_tools[0] and at["listed"] == 52
