"""Which simulated user a trial met: two user models that the cache of user turns tells apart
(here, by their message length limit) are two users in the recorded identity too, so a
scorecard never pools them without saying so."""

from __future__ import annotations

from pathlib import Path

from mcp_farm.schema import UserCard, UserIdentity, UserModel
from mcp_farm.workers.model.adapters import make_client
from mcp_farm.workers.usersim.cache import turn_key
from mcp_farm.workers.usersim.loop import user_side
from tests.helpers import scripted

CARD = UserCard(opening="Book it.", reason="A dentist visit.", satisfied_when="It is booked.")


def test_users_that_differ_only_in_max_tokens_are_recorded_as_two_users(tmp_path: Path) -> None:
    target = scripted([], "user-script")
    client = make_client(target, tmp_path)
    short, long = (UserModel(model=target, max_tokens=n) for n in (32, 160))
    identities = [user_side(client, u, CARD, 0).record.identity for u in (short, long)]
    keys = [
        turn_key(i, u, "system", "You: hi") for i, u in zip(identities, (short, long), strict=True)
    ]
    assert keys[0] != keys[1]  # the cache tells them apart ...
    assert identities[0].pool_key != identities[1].pool_key  # ... and so does the scorecard
    assert "max_tokens=32" in identities[0].pool_key


def test_a_record_stored_before_max_tokens_was_kept_keeps_its_pool_key() -> None:
    old = UserIdentity.model_validate(
        {"model_id": "u", "model_key": "k", "temperature": 0, "seed": 1, "guideline": "v1"}
    )
    assert old.max_tokens is None
    assert old.pool_key.startswith("u t=0 guideline v1 (")
