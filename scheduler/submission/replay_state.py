"""What a replay changed in a trial's state probes (docs/state.md): a probe that now fails or
now passes, or finds another value, though the outcome may not say so (under `grade_by:
calls` a probe never decides it, and a probe may find another value that still fits).

Probes are matched by their place in the trial's list (a scenario runs its probes in the same
order every time). A trial that has no probe results on one side (an infrastructure error, a
recording from before probes) is not compared here: its outcome says what happened.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_farm.schema import IgnoreRules, Scenario
from mcp_farm.schema.parse.paths import value_at

ProbeChangeKind = Literal["now fails", "now passes", "found changed", "not run", "new"]
"""What changed about one probe between the recording and the replay."""

UNREADABLE = "\x00unreadable"
"""What a probe result's `found` holds when the value could not be read (workers/state.py)."""


@dataclass(frozen=True)
class ProbeChange:
    label: str
    kind: ProbeChangeKind
    turn: int | None = None
    """The user turn it ran after (1-based); None for a probe run after the trial."""
    detail: str = ""
    """Why a probe that now fails does not fit."""
    diff: list[str] = field(default_factory=list)
    """A unified diff of the value found (indented JSON), the trial's ignore rules applied."""

    @property
    def where(self) -> str:
        """How a report names the probe: `probe 'x'` or `turn 2 probe 'x'`."""
        probe = f"probe {self.label!r}"
        return probe if self.turn is None else f"turn {self.turn} {probe}"

    @property
    def what(self) -> str:
        return f"{self.kind}: {self.detail}" if self.detail else self.kind


def stored_probes(row: Any) -> list[dict[str, Any]] | None:
    """A trial row's probe results (`state_json`); None when it holds none."""
    text = getattr(row, "state_json", None) or ""
    if not text:
        return None
    probes = json.loads(text).get("probes")
    return [p for p in probes if isinstance(p, dict)] if isinstance(probes, list) else None


Differ = Callable[[list[str], list[str]], list[str]]
"""How two texts' lines are diffed for a report (replay_changes.py's `line_diff`)."""


def probe_paths(scenario: Scenario, probes: list[dict[str, Any]]) -> list[str | None]:
    """Per stored probe result, the `at:` path its probe judges (None: the whole value), as the
    scenario writes it: the k-th result of a turn is that turn's k-th probe, the k-th of the
    end the scenario's own (a probe runs in the same order every time)."""
    seen: dict[int | None, int] = {}
    paths: list[str | None] = []
    said = scenario.dialogue()
    for p in probes:
        turn = p.get("turn")
        turn = turn if isinstance(turn, int) else None
        k = seen[turn] = seen.get(turn, -1) + 1
        written = scenario.state if turn is None else said[turn].state if turn < len(said) else []
        paths.append(written[k].at if k < len(written) else None)
    return paths


def probe_changes(
    was_row: Any,
    now_row: Any,
    rules: IgnoreRules,
    differ: Differ,
    scenario: Scenario | None = None,
) -> list[ProbeChange]:
    """Per probe, in order, once: its verdict changed (with the diff of the value found, where
    that changed too), or only the value found. The value compared is the part its probe's
    `at:` judges (`scenario`: the trial's scenario; None compares whole values); a probe run
    on one side only. Nothing when either side has no probe results."""
    was, now = stored_probes(was_row), stored_probes(now_row)
    if was is None or now is None:
        return []
    paths = probe_paths(scenario, now) if scenario is not None else [None] * len(now)
    found = []
    for i in range(max(len(was), len(now))):
        if i >= len(now):
            found.append(_change(was[i], "not run"))
            continue
        if i >= len(was):
            found.append(_change(now[i], "new"))
            continue
        before, after = was[i], now[i]
        lines = [_lines(p.get("found"), rules, paths[i]) for p in (before, after)]
        diff = differ(*lines) if lines[0] != lines[1] else []
        passed, passes = before.get("problem") is None, after.get("problem") is None
        if passed and not passes:
            why = str(after.get("problem") or "")[:300]
            found.append(_change(after, "now fails", why, diff))
        elif passes and not passed:
            found.append(_change(after, "now passes", diff=diff))
        elif diff:
            found.append(_change(after, "found changed", diff=diff))
    return found


def _change(
    probe: dict[str, Any], kind: ProbeChangeKind, detail: str = "", diff: list[str] | None = None
) -> ProbeChange:
    turn = probe.get("turn")
    return ProbeChange(
        label=str(probe.get("label") or probe.get("kind") or "?"),
        kind=kind,
        turn=turn + 1 if isinstance(turn, int) else None,
        detail=detail,
        diff=diff or [],
    )


def _lines(found: Any, rules: IgnoreRules, at: str | None = None) -> list[str]:
    """A value found as lines to compare: the ignore rules applied to all of it (their paths
    start at its top), then the part `at` names, as indented JSON."""
    if not isinstance(found, str) or found == UNREADABLE:
        return ["(could not be read)"]
    value = rules.applied(json.loads(found))
    if at:
        value = value_at(value, at)
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
