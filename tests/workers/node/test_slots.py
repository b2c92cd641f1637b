"""The per-endpoint concurrency cap, on a real Redis."""

from __future__ import annotations

import pytest

from mcp_farm.schema import ModelTarget
from mcp_farm.workers.node.slots import (
    SlotBusy,
    Slots,
    slot_key,
)

pytestmark = pytest.mark.integration

GPU_BOX = ModelTarget(
    id="qwen", adapter="openai", model="qwen", endpoint="http://gpu:8000/v1", max_concurrency=2
)


def test_a_full_endpoint_makes_the_next_trial_wait_then_give_up(redis_url: str) -> None:
    slots = Slots(redis_url)
    with (
        slots.hold(GPU_BOX, wait_s=0, lease_s=60),
        slots.hold(GPU_BOX, wait_s=0, lease_s=60),
        pytest.raises(SlotBusy, match="2 slot"),
        slots.hold(GPU_BOX, wait_s=0.3, lease_s=60),
    ):
        pass
    with slots.hold(GPU_BOX, wait_s=0, lease_s=60):  # released on exit: free again
        pass


def test_a_slot_held_by_a_killed_worker_frees_itself_when_its_lease_ends(redis_url: str) -> None:
    slots = Slots(redis_url)
    one = GPU_BOX.model_copy(update={"max_concurrency": 1})
    lost = slots.hold(one, wait_s=0, lease_s=0.2)
    lost.__enter__()  # never exited, like a worker that died holding it
    with slots.hold(one, wait_s=3, lease_s=60):
        pass


def test_models_that_serve_themselves_have_no_cap() -> None:
    scripted = ModelTarget(id="s", adapter="scripted", model="x", script=[])
    assert slot_key(scripted) is None
    assert slot_key(GPU_BOX) == "farm:slots:http://gpu:8000/v1"
