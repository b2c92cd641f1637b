"""Selection recall in the scorecard: per configuration whose prompt selects tools before the
model (`select:`), the share of trials (and of user messages) whose selection held the tools
they called for, with Wilson intervals, and each failed trial put on the selector (a message's
selection lacked a tool it called for) or on the model (every selection held its tools).

The recall of each user message is in the trial's provenance (`selection_recall`: the share of
that message's expected tools its selection held; null where it expected none)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp_farm.scheduler.scorecard.queries.provenance import prompt_payloads, selection_trials
from mcp_farm.scheduler.statistics.rates import wilson
from mcp_farm.schema.scorecard import SelectionRecall

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


@dataclass
class _Tally:
    method: str
    k: int
    trials: int = 0
    held: int = 0
    messages: int = 0
    messages_held: int = 0
    failures: int = 0
    selector_missed: int = 0
    held_passes: int = 0

    def add(self, outcome: str, recalls: list[float | None]) -> None:
        asked = [r for r in recalls if r is not None]
        missed = any(r < 1.0 for r in asked)
        self.messages += len(asked)
        self.messages_held += sum(1 for r in asked if r >= 1.0)
        if asked:
            self.trials += 1
            self.held += 0 if missed else 1
            self.held_passes += 1 if outcome == "pass" and not missed else 0
        if outcome != "pass":
            self.failures += 1
            self.selector_missed += 1 if missed else 0


def _how(payload_json: str) -> tuple[str, int] | None:
    """(method label, k) of a trial payload's `select:`; None when its prompt selects none."""
    prompt: Any = json.loads(payload_json).get("prompt") or {}
    select = prompt.get("select")
    if not select:
        return None
    method = str(select["method"])
    if method == "embedding":
        method = f"embedding ({select.get('model')})"
    return method, int(select.get("k", 5))


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _interval(part: int, whole: int) -> tuple[float | None, float | None]:
    return wilson(part, whole) if whole else (None, None)


def selection_recall(conn: Connection, sweep_id: str, skip_left: bool) -> list[SelectionRecall]:
    """One entry per model × config whose prompt selects tools, in their order."""
    selecting = {
        prompt: how
        for prompt, payload in prompt_payloads(conn, sweep_id).items()
        if (how := _how(payload)) is not None
    }
    tallies: dict[tuple[str, str], _Tally] = {}
    for row in selection_trials(conn, sweep_id, sorted(selecting), skip_left):
        key = (str(row.model_id), str(row.config))
        if key not in tallies:
            tallies[key] = _Tally(*selecting[str(row.prompt_id)])
        recalls = json.loads(row.provenance_json).get("selection_recall") or []
        tallies[key].add(str(row.outcome), recalls)
    return [_entry(model, prompt, tally) for (model, prompt), tally in sorted(tallies.items())]


def _entry(model: str, prompt: str, t: _Tally) -> SelectionRecall:
    low, high = _interval(t.held, t.trials)
    message_low, message_high = _interval(t.messages_held, t.messages)
    return SelectionRecall(
        model=model,
        prompt=prompt,
        method=t.method,
        k=t.k,
        trials=t.trials,
        held=t.held,
        rate=_rate(t.held, t.trials),
        low=low,
        high=high,
        messages=t.messages,
        messages_held=t.messages_held,
        message_rate=_rate(t.messages_held, t.messages),
        message_low=message_low,
        message_high=message_high,
        failures=t.failures,
        selector_missed=t.selector_missed,
        model_failed=t.failures - t.selector_missed,
        held_passes=t.held_passes,
        held_pass_rate=_rate(t.held_passes, t.held),
    )
