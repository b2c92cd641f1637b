"""Plain progress lines for output that is not a terminal (CI logs, `nohup`, a pipe).

A live bar redraws one line in place; written to a file it shows nothing until it stops. So
where stdout is not a terminal, `farm run` and `farm sweep status --watch` print one ordinary
line now and then instead: after every twentieth of the sweep, and at least every
`EVERY_S` seconds while the command watches.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

EVERY_S = 15.0
"""The longest gap between two lines while something is being watched."""
LINES_PER_SWEEP = 20
"""About how many lines a sweep's progress takes when trials finish faster than EVERY_S."""


def duration(seconds: float | None) -> str:
    """`1m05s`, `2h03m`, or `–` when unknown."""
    if seconds is None:
        return "–"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


@dataclass
class LinePacer:
    """Says when the next progress line is due, so a log gets a steady trickle, not a flood.

    A line is due on the first look, whenever `every_n` more trials have finished since the
    last line, when `every_s` seconds have passed since it (a sign of life while nothing
    moves), and once when everything has finished.
    """

    total: int
    every_s: float = EVERY_S
    clock: Callable[[], float] = time.monotonic
    every_n: int = 0
    """Trials between lines; 0 means a twentieth of `total` (at least 1)."""
    _last_done: int | None = field(default=None, init=False)
    _last_at: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        if self.every_n <= 0:
            self.every_n = max(1, math.ceil(self.total / LINES_PER_SWEEP))

    def due(self, done: int) -> bool:
        """Whether to print a line now that `done` trials have finished (records it if so)."""
        now = self.clock()
        last = self._last_done
        is_due = (
            last is None
            or (done >= self.total and done != last)
            or done - last >= self.every_n
            or now - self._last_at >= self.every_s
        )
        if is_due:
            self._last_done, self._last_at = done, now
        return is_due


def run_line(*, done: int, total: int, passes: int, elapsed_s: float) -> str:
    """One line of an embedded run: `progress 6/24 (25%) · pass 4 · 1m30s elapsed · eta 4m30s`."""
    share = f"{100 * done / total:.0f}%" if total else "100%"
    eta = elapsed_s / done * (total - done) if done else None
    return (
        f"progress {done}/{total} ({share}) · pass {passes} · "
        f"{duration(elapsed_s)} elapsed · eta {duration(eta)}"
    )
