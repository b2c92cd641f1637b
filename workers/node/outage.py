"""An expected outage (the results database or the broker away) in the log as an admin wants it: one line
when it starts, a summary with counts every `SUMMARY_S` while it lasts, one line when it ends.

Heartbeats, lease renewals, the reaper's checks and trial saves all meet the same outage; each
reports its failures here instead of writing a traceback per attempt. Tracebacks stay for the
unexpected: a failure that is not the database being away is logged as before by its caller.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

logger = logging.getLogger(__name__)

SUMMARY_S = 30.0
"""Seconds between the summaries of an outage that goes on."""


def _short(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first[:200]}" if first else type(exc).__name__


class Outage:
    """One condition (e.g. "the results database is unreachable"), shared by the threads of a
    process."""

    def __init__(self, what: str, summary_s: float = SUMMARY_S) -> None:
        self.what, self.summary_s = what, summary_s
        self._lock = threading.Lock()
        self._since: float | None = None
        self._last_summary = 0.0
        self._failures: Counter[str] = Counter()

    @property
    def ongoing(self) -> bool:
        return self._since is not None

    def failed(self, where: str, exc: BaseException) -> None:
        """`where` (a heartbeat, a save) met the outage."""
        now = time.monotonic()
        with self._lock:
            self._failures[where] += 1
            if self._since is None:
                self._since = self._last_summary = now
                logger.warning(
                    "%s unreachable (%s: %s); trying again quietly, with a summary every %g s",
                    self.what,
                    where,
                    _short(exc),
                    self.summary_s,
                )
            elif now - self._last_summary >= self.summary_s:
                self._last_summary = now
                logger.warning(
                    "%s still unreachable after %.0f s: %s",
                    self.what,
                    now - self._since,
                    self._counts(),
                )

    def ok(self) -> None:
        """Something reached it again: the outage, if there was one, is over."""
        if self._since is None:
            return
        with self._lock:
            if self._since is None:
                return
            logger.warning(
                "%s reachable again after %.0f s (%s)",
                self.what,
                time.monotonic() - self._since,
                self._counts(),
            )
            self._since = None
            self._failures.clear()

    def _counts(self) -> str:
        return ", ".join(f"{n} {where}" for where, n in self._failures.most_common()) + " failed"


DATABASE = Outage("the results database is")
"""The outage every database step of a worker process reports to."""

BROKER = Outage("the broker (Redis) is")
"""The outage the reaper's lease checks and Celery's task consumer (its lost connection and every
reconnection attempt, node/celery_app.py) report to when Redis does not answer."""
