"""The tool list as an axis, through the real fixture servers and the distractor server."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from mcp_farm.scenarios import load_prompt, load_suite, server_catalog
from mcp_farm.schema import Settings, TrialResult, TrialSpec, digest
from mcp_farm.schema.specs import DISTRACTOR_SERVER, Selection, ToolListLevel
from mcp_farm.workers.mcp.connections import connect
from mcp_farm.workers.mcp.pool import ServerPool
from mcp_farm.workers.mcp.toollist import first_sentence, paraphrase, shape_tools
from mcp_farm.workers.trial import execute_trial
from tests.helpers import ideal_script, trial

pytestmark = pytest.mark.integration
BASIC = {s.id: s for s in load_suite("basic").scenarios}
LISTING = BASIC["fs.list-desktop"]


def _at(level: ToolListLevel, script: list[dict[str, object]], seed: int = 0) -> TrialSpec:
    spec = trial(LISTING, script, repetition=seed)
    return spec.model_copy(update={"tool_list": level, "trial_id": ""})


def _run(spec: TrialSpec, settings: Settings) -> TrialResult:
    return anyio.run(execute_trial, TrialSpec.model_validate(spec.model_dump()), settings)


def _shown(level: ToolListLevel, seed: int, root: Path) -> list[tuple[str, str, str]]:
    """The list a trial of fs.list-desktop would show: (shown name, server, real tool)."""
    catalog = server_catalog()
    servers = [catalog["filesystem"], catalog[DISTRACTOR_SERVER]]

    async def listed() -> list[tuple[str, str, str]]:
        async with anyio.create_task_group() as tg:
            pool = ServerPool(tg, root, 20.0)
            try:
                async with connect(servers, pool, "plain") as conn:
                    await shape_tools(conn, level, seed, LISTING.id, LISTING.expected_tools)
                    return [(t.shown_name, t.server, t.tool) for t in conn.tools.values()]
            finally:
                pool.close()

    return anyio.run(listed)


def test_the_same_seed_shows_the_same_list_and_another_seed_places_it_anew(
    tmp_path: Path,
) -> None:
    level = ToolListLevel(tool_count=10)
    first = _shown(level, 3, tmp_path / "a")
    again = _shown(level, 3, tmp_path / "b")
    other = _shown(level, 4, tmp_path / "c")
    assert first == again
    assert first != other
    own = [tool for _name, server, tool in first if server == "filesystem"]
    plain = [tool for _name, server, tool in _shown(ToolListLevel(), 3, tmp_path / "d")]
    assert sorted(own) == sorted(plain)
    drawn = [tool for _name, server, tool in first if server == DISTRACTOR_SERVER]
    assert len(drawn) == 10
    # At least one distractor is a near-miss of the scenario's own tools.
    assert any(tool.startswith("near.filesystem.") for tool in drawn)


def test_an_ideal_agent_passes_among_fifty_distractors_with_stripped_descriptions(
    settings: Settings,
) -> None:
    level = ToolListLevel(tool_count=50, descriptions="stripped")
    result = _run(_at(level, ideal_script(LISTING)), settings)
    assert result.outcome == "pass", result.detail
    assert [c.tool for c in result.tool_calls] == ["list_directory"]


def test_a_distractor_is_callable_and_calling_it_is_graded_wrong_tool_naming_it(
    settings: Settings, tmp_path: Path
) -> None:
    level = ToolListLevel(tool_count=10)
    listed = _shown(level, 0, tmp_path)
    name, _server, real = next(t for t in listed if t[2].startswith("near.filesystem."))
    # Every argument any filesystem tool requires, so the near-miss answers as it would.
    args = {"path": "/Desktop", "content": "x", "source": "a", "destination": "b", "text": "x"}
    args |= {"pattern": "x", "paths": ["/Desktop"], "edits": [], "query": "x"}
    script = [{"call": {"name": name, "arguments": args}}, {"answer": "none"}]
    result = _run(_at(level, script), settings)
    assert result.outcome == "wrong_tool"
    call = result.tool_calls[0]
    assert call.ok and call.server == DISTRACTOR_SERVER and call.tool == real
    assert call.result_text  # it answered
    assert real in (result.detail or "")


def test_scrambled_names_are_mapped_back_to_the_real_tool(settings: Settings) -> None:
    level = ToolListLevel(names="scrambled")
    opaque = "tool_" + digest(["filesystem", "list_directory"])[:8]
    script = [{"call": {"name": opaque, "arguments": {"path": "/Desktop"}}}, {"answer": "todo"}]
    result = _run(_at(level, script), settings)
    assert result.outcome == "pass", result.detail
    assert result.tool_calls[0].tool == "list_directory"
    assert result.tool_calls[0].server == "filesystem"


def test_colliding_names_give_the_later_tool_its_server_prefix(tmp_path: Path) -> None:
    listed = _shown(ToolListLevel(tool_count=4, names="colliding"), 0, tmp_path)
    assert len([t for t in listed if t[1] == DISTRACTOR_SERVER]) == 4
    twins = [t for t in listed if t[2].endswith(".list_directory") or t[2] == "list_directory"]
    assert len(twins) == 2
    names = [name for name, _server, _tool in twins]
    assert names == ["list_directory", "filesystem__list_directory"]


def test_descriptions_are_rewritten_deterministically() -> None:
    text = "List the files in a folder. Hidden files are left out."
    assert first_sentence(text) == "List the files in a folder."
    assert paraphrase(text) == paraphrase(text) != text
    assert paraphrase(text).startswith("Hidden")


READ_TODO = BASIC["fs.read-todo"]


def _selected(scenario_id: str, suite: str = "basic") -> TrialSpec:
    scenario = {s.id: s for s in load_suite(suite).scenarios}[scenario_id]
    prompt = load_prompt("native").model_copy(update={"select": Selection(method="bm25", k=5)})
    spec = trial(scenario, ideal_script(scenario), suite=suite, prompt=prompt)
    return spec.model_copy(update={"tool_list": ToolListLevel(tool_count=50), "trial_id": ""})


def test_selection_shows_k_tools_and_records_its_recall(settings: Settings) -> None:
    result = _run(_selected(READ_TODO.id), settings)
    assert result.provenance.selection_recall == [1.0]
    assert result.outcome == "pass", result.detail
    assert [c.tool for c in result.tool_calls] == ["read_file"]


def test_selection_runs_again_on_each_user_turn(settings: Settings) -> None:
    talk = next(s for s in load_suite("conversations").scenarios if s.id == "conv.note-then-append")
    spec = _selected(talk.id, "conversations")
    # Every turn runs even when the selection missed a turn's tool and the turn failed.
    spec = spec.model_copy(update={"on_turn_failure": "continue", "trial_id": ""})
    result = _run(spec, settings)
    recalls = result.provenance.selection_recall
    assert recalls is not None and len(recalls) == len(talk.turns)
    assert all(r is None or 0.0 <= r <= 1.0 for r in recalls)


def test_the_explorer_names_the_real_tool_of_a_scrambled_call() -> None:
    from types import SimpleNamespace

    from mcp_farm.scheduler.view.transcript import entries

    opaque = "tool_" + digest(["filesystem", "list_directory"])[:8]
    call = {"id": "c1", "name": opaque, "arguments": {"path": "/Desktop"}}
    trial = SimpleNamespace(
        transcript_json=json.dumps([{"role": "assistant", "content": "", "tool_calls": [call]}]),
        elicitations_json="[]",
        setup_json="[]",
    )
    row = SimpleNamespace(
        tool="list_directory", server="filesystem", ok=True, error=None, latency_s=0.1, idx=0
    )
    shown = [e for e in entries(trial, [row]) if e.kind == "call"]
    assert shown[0].text == f"list_directory (shown to the model as {opaque})"
