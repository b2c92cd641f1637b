"""An embedded run takes the trials that open with the same prompt back to back, so a local
model reuses the prompt it has already read; otherwise the plan's order stands."""

from __future__ import annotations

from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.submission.embedded import by_shared_prompt
from tests.helpers import trial

BASIC = {s.id: s for s in load_suite("basic").scenarios}


def test_trials_sharing_model_prompt_and_servers_run_together_in_first_seen_order() -> None:
    fs, todo = BASIC["fs.list-desktop"], BASIC["fs.read-todo"]
    plan = [
        trial(fs, [], prompt="native", repetition=0),
        trial(fs, [], prompt="json", repetition=0),
        trial(todo, [], prompt="native", repetition=0),
        trial(fs, [], prompt="native", repetition=1),
        trial(todo, [], prompt="json", repetition=0),
    ]
    ordered = by_shared_prompt(plan)
    assert sorted(t.trial_id for t in ordered) == sorted(t.trial_id for t in plan)
    assert [t.prompt.id for t in ordered] == ["native", "native", "native", "json", "json"]
    natives = [t for t in plan if t.prompt.id == "native"]
    assert ordered[:3] == natives  # the plan's order inside a group


def test_one_group_keeps_the_plan_order() -> None:
    plan = [trial(BASIC["fs.list-desktop"], [], repetition=r) for r in range(4)]
    assert by_shared_prompt(plan) == plan
