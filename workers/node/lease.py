"""Trial leases: the process running a trial renews its lease every heartbeat.

A trial row that is `running` says who claimed it, not whether that process still lives. The
lease (`trial.beat_at`) does: one thread per process renews the leases of every trial the
process holds, in one UPDATE per heartbeat. A lease older than a few heartbeats marks a holder
that was killed (a prefork child, a whole worker, an embedded `farm run`), and its trial may be
claimed again; a fresh lease keeps a second delivery of the same trial from running it twice.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlalchemy.exc import SQLAlchemyError

from mcp_farm.workers.node.outage import DATABASE
from mcp_farm.workers.store.nodes import renew_leases

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

logger = logging.getLogger(__name__)


class Leases:
    """The trials this process is running, renewed from one daemon thread."""

    def __init__(self, engine: Engine, every_s: float) -> None:
        self.engine, self.every_s = engine, every_s
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._pid = 0

    @contextmanager
    def hold(self, trial_id: str) -> Iterator[None]:
        """Keep `trial_id`'s lease fresh while the block runs."""
        with self._lock:
            self._held.add(trial_id)
            # A forked child inherits the object but not the thread: start one per process.
            if self._pid != os.getpid():
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="farm-leases", daemon=True).start()
        try:
            yield
        finally:
            with self._lock:
                self._held.discard(trial_id)

    def _run(self) -> None:
        while not self._wake.wait(self.every_s):
            try:
                self.renew()
            except SQLAlchemyError as exc:  # the database is away: the next beat tries again
                DATABASE.failed("lease renewal", exc)

    def renew(self) -> int:
        """Renew every held lease now; returns how many rows were renewed."""
        with self._lock:
            held = sorted(self._held)
        if not held:
            return 0
        return renew_leases(self.engine, held)


_LEASES: dict[tuple[int, str, float], Leases] = {}


def leases_for(engine: Engine, every_s: float) -> Leases:
    """The process's lease keeper for one database (a forked child gets its own, on its own
    engine: connections must not cross a fork)."""
    key = (os.getpid(), str(engine.url), every_s)
    if key not in _LEASES:
        _LEASES[key] = Leases(engine, every_s)
    return _LEASES[key]
