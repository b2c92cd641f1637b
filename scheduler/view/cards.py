"""The sweep page's scorecards, built off the request: a page shows the last card built, with
live progress from counts beside it, and a running sweep's card is rebuilt in the background
when trials have finished since, no more often than REBUILD_S (or five times its own build
time), never once per request. A stored card of a finished sweep is read, not built."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.queries.stored import stored_scorecard

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from mcp_farm.schema.scorecard import Scorecard

REBUILD_S = 30.0
"""The least time between two builds of one running sweep's card."""
BUSY_SHARE = 5
"""…and at least this many times the last build's own time: building takes a fifth of a core
at most, however big the sweep."""
FIRST_WAIT_S = 0.8
"""How long the request that starts a sweep's first card waits for it before it shows progress
alone (and reloads): a small sweep's card comes in the same response, a million trials' does
not hold the page up."""

Builder = Callable[[str], "Scorecard"]


@dataclass(frozen=True)
class Built:
    """A card with when it was built and how many trials were done then."""

    card: Scorecard
    done: int
    at: float
    """time.monotonic() when the build finished."""
    took_s: float


class Cards:
    """One explorer's scorecards, one per sweep, each built by at most one thread at a time."""

    def __init__(
        self, engine: Engine, *, builder: Builder | None = None, first_wait_s: float = FIRST_WAIT_S
    ) -> None:
        self.engine = engine
        self.builder: Builder = builder or (lambda s: build_scorecard(engine=engine, sweep_id=s))
        self.first_wait_s = first_wait_s
        self.builds = 0
        """How many builds have started (the tests count them)."""
        self._lock = threading.Lock()
        self._built: dict[str, Built] = {}
        self._building: dict[str, threading.Thread] = {}

    def card(self, sweep_id: str, done: int, *, live: bool) -> Built | None:
        """The latest card of the sweep (None while its first is still being built), and a
        rebuild started when it is due. `done`: the sweep's finished trials, counted now."""
        if not live:
            stored = stored_scorecard(engine=self.engine, sweep_id=sweep_id)
            if stored is not None and stored.done >= stored.total:
                return Built(stored, done, time.monotonic(), 0.0)
        waiting = None
        with self._lock:
            found = self._built.get(sweep_id)
            if self._due(found, done) and sweep_id not in self._building:
                thread = threading.Thread(
                    target=self._build, args=(sweep_id, done), daemon=True, name="farm-view-card"
                )
                self._building[sweep_id] = thread
                self.builds += 1
                thread.start()
                # Only the request that started a sweep's first build waits for it, briefly;
                # the others answer at once.
                waiting = thread if found is None else None
        if waiting is not None:
            waiting.join(self.first_wait_s)
            with self._lock:
                found = self._built.get(sweep_id)
        return found

    def settle(self, timeout_s: float) -> None:
        """Wait (at most `timeout_s` each) for the builds under way to finish."""
        with self._lock:
            threads = list(self._building.values())
        for thread in threads:
            thread.join(timeout_s)

    @staticmethod
    def _due(found: Built | None, done: int) -> bool:
        if found is None:
            return True
        if found.done == done:
            return False
        return time.monotonic() - found.at >= max(REBUILD_S, BUSY_SHARE * found.took_s)

    def _build(self, sweep_id: str, done: int) -> None:
        started = time.monotonic()
        try:
            card = self.builder(sweep_id)
        except BaseException:
            # The next request tries again (and its page says the card is not there yet).
            with self._lock:
                self._building.pop(sweep_id, None)
            raise
        finished = time.monotonic()
        with self._lock:
            # Stored and marked done at once: no request sees neither and builds it again.
            self._built[sweep_id] = Built(card, done, finished, finished - started)
            self._building.pop(sweep_id, None)
