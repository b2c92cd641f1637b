"""The sweep page's scorecards, built off the request: a page shows the last card built, with
live progress from counts beside it, and a running sweep's card is rebuilt in the background
(one build of a sweep at a time) when trials have finished since and REBUILD_S have passed
since the last build started, never once per request. A big sweep's card is built in a child
process of its own, at a lower priority, so the explorer's own process (its pages, its GIL)
is not slowed by it; a small one's in a thread, in milliseconds. A stored card of a finished
sweep is read, not built."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.queries.stored import stored_scorecard
from mcp_farm.schema.scorecard import Scorecard

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

REBUILD_S = 30.0
"""The most time between two builds of one running sweep's card while its page is open (the
page reloads as often): a card is at most this old plus one build's time."""
CHILD_FROM_TRIALS = 20_000
"""A sweep of this many trials or more has its card built in a child process (seconds of
Python at a million trials); a smaller one in a thread (milliseconds)."""
CHILD_NICE = 10
"""How much lower the child's priority is: the explorer's pages come first."""
FIRST_WAIT_S = 0.8
"""How long the request that starts a sweep's first card waits for it before it shows progress
alone (and reloads): a small sweep's card comes in the same response, a million trials' does
not hold the page up."""

Builder = Callable[[str], Scorecard]


def _lower_priority() -> None:
    os.nice(CHILD_NICE)


def _built_json(url: str, sweep_id: str) -> str:
    """In the child: the sweep's card, read only, as JSON (a typed message back)."""
    from mcp_farm.scheduler.view.queries import read_only
    from mcp_farm.schema.db import make_engine

    engine = read_only(make_engine(url))
    try:
        return build_scorecard(engine=engine, sweep_id=sweep_id).model_dump_json()
    finally:
        engine.dispose()


@dataclass(frozen=True)
class Built:
    """A card with when it was built and how many trials were done then."""

    card: Scorecard
    done: int
    at: float
    """time.monotonic() when the build finished."""
    took_s: float
    started: float = 0.0
    """time.monotonic() when the build started: the next is due REBUILD_S after it."""


class Cards:
    """One explorer's scorecards, one per sweep, each built by at most one thread at a time."""

    def __init__(
        self, engine: Engine, *, builder: Builder | None = None, first_wait_s: float = FIRST_WAIT_S
    ) -> None:
        self.engine = engine
        self.builder: Builder = builder or (lambda s: build_scorecard(engine=engine, sweep_id=s))
        self.in_child = builder is None and engine.url.database not in (None, "", ":memory:")
        """Big sweeps' cards are built in a child process (not for a given builder, nor for
        an in-memory database no other process can open)."""
        self._child: ProcessPoolExecutor | None = None
        self.first_wait_s = first_wait_s
        self.builds = 0
        """How many builds have started (the tests count them)."""
        self._lock = threading.Lock()
        self._built: dict[str, Built] = {}
        self._building: dict[str, threading.Thread] = {}

    def card(self, sweep_id: str, done: int, *, live: bool, total: int = 0) -> Built | None:
        """The latest card of the sweep (None while its first is still being built), and a
        rebuild started when it is due. `done`: the sweep's finished trials, counted now, of
        `total`."""
        if not live:
            stored = stored_scorecard(engine=self.engine, sweep_id=sweep_id)
            if stored is not None and stored.done >= stored.total:
                return Built(stored, done, time.monotonic(), 0.0)
        waiting = None
        with self._lock:
            found = self._built.get(sweep_id)
            if self._due(found, done) and sweep_id not in self._building:
                big = self.in_child and total >= CHILD_FROM_TRIALS
                thread = threading.Thread(
                    target=self._build,
                    args=(sweep_id, done, big),
                    daemon=True,
                    name="farm-view-card",
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

    def close(self) -> None:
        """Stop the child process, if one was started (it also ends with this process)."""
        with self._lock:
            child, self._child = self._child, None
        if child is not None:
            child.shutdown(wait=False, cancel_futures=True)

    @staticmethod
    def _due(found: Built | None, done: int) -> bool:
        if found is None:
            return True
        if found.done == done:
            return False
        return time.monotonic() - found.started >= REBUILD_S

    def _in_child(self, sweep_id: str) -> Scorecard:
        with self._lock:
            if self._child is None:
                # Spawned, not forked: the explorer's threads and connections stay its own.
                self._child = ProcessPoolExecutor(
                    max_workers=1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_lower_priority,
                )
            child = self._child
        url = self.engine.url.render_as_string(hide_password=False)
        return Scorecard.model_validate_json(child.submit(_built_json, url, sweep_id).result())

    def _build(self, sweep_id: str, done: int, big: bool) -> None:
        started = time.monotonic()
        try:
            card = self._in_child(sweep_id) if big else self.builder(sweep_id)
        except BaseException:
            # The next request tries again (and its page says the card is not there yet), in
            # a new child if this one died.
            if big:
                self.close()
            with self._lock:
                self._building.pop(sweep_id, None)
            raise
        finished = time.monotonic()
        with self._lock:
            # Stored and marked done at once: no request sees neither and builds it again.
            self._built[sweep_id] = Built(card, done, finished, finished - started, started)
            self._building.pop(sweep_id, None)
