"""The cache of user turns: at temperature 0 the same input gets the same reply, so a user
message is kept under the digest of everything the user model was given (its identity, the
guideline and card, the visible conversation) and a repeated agent behaviour meets the
identical user without a second call (docs/simulated-user.md, "Reproducible users")."""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

import anyio

from mcp_farm.schema import StoreError, UserIdentity, UserModel, digest
from mcp_farm.schema.db import make_engine
from mcp_farm.workers.store.user_turns import find_user_turn, save_user_turn

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

logger = logging.getLogger(__name__)


class TurnCache(Protocol):
    """Where user turns are kept: a miss is None; a cache that cannot be reached is a miss."""

    async def get(self, key: str) -> str | None: ...

    async def put(self, key: str, text: str, model_id: str) -> None: ...


def turn_key(identity: UserIdentity, settings: UserModel, system_prompt: str, visible: str) -> str:
    """The digest a user turn is cached under. The seed counts only above temperature 0,
    where it changes the reply (and where the loop does not use the cache at all)."""
    key: dict[str, object] = {
        "target": identity.model_key,
        "pins": identity.pins,
        "temperature": identity.temperature,
        "max_tokens": settings.max_tokens,
        "guideline": identity.guideline,
        "system": system_prompt,
        "visible": visible,
    }
    if identity.temperature > 0:
        key["seed"] = identity.seed
    return digest(key)


@lru_cache(maxsize=4)
def _engine(url: str) -> Engine:
    # A small pool: a user turn is one short read and at most one write.
    return make_engine(url, pool_size=2, pre_ping=False)


class DbTurnCache:
    """The cache in the results database (table `user_turn`), which embedded and distributed
    workers already share. Database trouble never fails a trial: the turn is then asked of
    the user model, as without a cache, and the trouble is logged."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def get(self, key: str) -> str | None:
        try:
            return await anyio.to_thread.run_sync(self._find, key)
        except StoreError as exc:
            logger.warning("user-turn cache not read (asking the user model): %s", exc)
            return None

    async def put(self, key: str, text: str, model_id: str) -> None:
        try:
            await anyio.to_thread.run_sync(self._save, key, text, model_id)
        except StoreError as exc:
            logger.warning("user-turn cache not written: %s", exc)

    def _find(self, key: str) -> str | None:
        return find_user_turn(engine=_engine(self.url), key=key)

    def _save(self, key: str, text: str, model_id: str) -> None:
        save_user_turn(engine=_engine(self.url), key=key, text=text, model_id=model_id)
