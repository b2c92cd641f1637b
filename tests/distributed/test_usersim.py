"""A simulated-user sweep on the real farm (Redis, a `farm worker`, PostgreSQL) records what the
same sweep records embedded: outcomes, the user's errors and whose fault a failure was, and the
scorecard's simulated-user block; and the worker meets the user turns the embedded run cached
in the shared database, so it asks the user model nothing (temperature 0). Slow: the bundled
model as the user on a worker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_farm.schema import UNGRADED
from tests.distributed.conftest import Farm
from tests.workers.model.test_real_models import _needs_llama
from tests.workers.usersim.test_simulated_user import IDEAL

pytestmark = pytest.mark.integration

DENTIST, GROCERIES = "usersim.dentist-ask-time", "usersim.groceries-ask-item"


def users(name: str) -> dict[str, Any]:
    """The dentist's ideal agent and user on two cards: true to the dentist's card, the user
    invents a time and a length on the groceries' one (a user error, and the user's fault)."""
    agent, user = IDEAL[DENTIST]
    return {
        "name": name,
        "models": [{"id": "dentist-agent", "adapter": "scripted", "model": "x", "script": agent}],
        "prompts": ["native"],
        "scenarios": {"suites": ["usersim"], "ids": [DENTIST, GROCERIES]},
        "repetitions": 1,
        "user_model": {
            "model": {"id": "user-script", "adapter": "scripted", "model": "x", "script": user},
            "temperature": 0.0,
        },
    }


def recorded(farm: Farm, sweep_id: str) -> dict[str, tuple[Any, ...]]:
    """Per scenario: outcome, detail, user errors, whose fault, and the user's messages."""
    found = {}
    for scenario, outcome, detail, errors, source, record in farm.rows(
        "select scenario_id, outcome, detail, user_errors, failure_source, user_sim_json "
        "from trial where sweep_id = :s",
        s=sweep_id,
    ):
        user = json.loads(record)
        found[scenario] = (outcome, detail, errors, source, user["messages"], user["errors"])
    return found


def user_cost(farm: Farm, sweep_id: str) -> dict[str, tuple[int, int]]:
    """Per scenario: the user replies that came from the cache, and the user model's tokens."""
    rows = farm.rows("select scenario_id, user_sim_json from trial where sweep_id = :s", s=sweep_id)
    found = {}
    for scenario, record in rows:
        user = json.loads(record)
        found[scenario] = (user["cached"], sum(user["tokens"].values()))
    return found


def test_a_simulated_user_sweep_on_the_farm_records_what_the_embedded_run_records(
    farm: Farm, tmp_path: Path
) -> None:
    embedded = farm.sweep_file(tmp_path, users("users-embedded"))
    farm.cli("run", str(embedded), "--db", farm.db_url)
    [(here,)] = farm.rows("select sweep_id from sweep")

    there = farm.submit(farm.sweep_file(tmp_path, users("users-farm")))
    farm.worker("cpu", "farm-cpu@test", "--control")  # the control queue aggregates
    remote_card = farm.scorecard(there)

    local, remote = recorded(farm, here), recorded(farm, there)
    assert remote == local
    assert remote[DENTIST][:4] == ("pass", "", 0, "none")
    assert remote[GROCERIES][2:4] == (1, "user")
    assert remote_card["simulated_users"] == farm.scorecard(here)["simulated_users"]
    # The embedded run asked the user model; the worker found every reply in the shared cache
    # and asked it nothing.
    assert all(hits == 0 and tokens > 0 for hits, tokens in user_cost(farm, here).values())
    assert all(hits > 0 and tokens == 0 for hits, tokens in user_cost(farm, there).values())


@pytest.mark.slow
def test_the_bundled_model_plays_the_user_on_a_farm_worker(farm: Farm, tmp_path: Path) -> None:
    """The worker loads the bundled model as the user (above temperature 0, so no cached turn
    stands in for it): the trial is graded, and the user's identity, tokens and whose fault
    are stored. It checks the plumbing, not how well a 270M model plays a user."""
    _needs_llama()
    sweep = users("users-gemma") | {
        "scenarios": {"suites": ["usersim"], "ids": [DENTIST]},
        "user_model": {
            "model": {"id": "gemma-user", "adapter": "local", "model": "gemma3-270m"},
            "temperature": 0.5,
            "seed": 3,
            "max_tokens": 48,
        },
    }
    there = farm.submit(farm.sweep_file(tmp_path, sweep))
    farm.worker("cpu", "farm-cpu@test", "--control")
    farm.scorecard(there, 300)
    [(outcome, detail, source, record)] = farm.rows(
        "select outcome, detail, failure_source, user_sim_json from trial where sweep_id = :s",
        s=there,
    )
    assert outcome not in UNGRADED, detail
    user = json.loads(record)
    assert user["identity"]["model_id"] == "gemma-user"
    assert user["tokens"]["completion"] > 0 and user["cached"] == 0
    assert source in ("agent", "user", "none")
