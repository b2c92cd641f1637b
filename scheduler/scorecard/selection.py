"""Selection recall in the scorecard: per configuration whose prompt selects tools before the
model (`select:`), the share of trials (and of user messages) whose selection held the tools
they called for, with Wilson intervals, and each failed trial put on the selector (a message's
selection lacked a tool it called for) or on the model (every selection held its tools).

The recall of each user message is in the trial's provenance (`selection_recall`: the share of
that message's expected tools its selection held; null where it expected none), and, in trials
recorded since, each selection (`selections`): whether a score tie decided it, where each
expected tool ranked (so recall at any k) and how long it took."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
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
    selections: int = 0
    tied: int = 0
    tied_trials: int = 0
    at: dict[int, float] = field(default_factory=dict)
    """Per k of RECALL_AT and the configured k, the sum of each message's recall@k."""
    ranked: int = 0
    """Messages that called for a tool, in trials that recorded their ranks."""
    seconds: list[float] = field(default_factory=list)

    def add_turns(self, turns: list[dict[str, Any]]) -> None:
        """Each recorded selection of a graded trial: ties, ranks and time."""
        self.selections += len(turns)
        ties = sum(1 for t in turns if t.get("tied"))
        self.tied += ties
        self.tied_trials += 1 if ties else 0
        self.seconds += [float(t.get("seconds") or 0.0) for t in turns]
        for turn in turns:
            ranks = turn.get("ranks") or []
            if not ranks:
                continue
            self.ranked += 1
            for k in {*RECALL_AT, self.k}:
                within = sum(1 for r in ranks if r is not None and r <= k)
                self.at[k] = self.at.get(k, 0.0) + within / len(ranks)

    def recall_at(self, k: int) -> float | None:
        return self.at.get(k, 0.0) / self.ranked if self.ranked else None

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


RECALL_AT = (1, 3, 5, 10)
"""The cut-offs the selection table reports recall at, beside the configured k."""


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
        pins = json.loads(row.provenance_json)
        tallies[key].add(str(row.outcome), pins.get("selection_recall") or [])
        tallies[key].add_turns(pins.get("selections") or [])
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
        selections=t.selections,
        tied=t.tied,
        tied_trials=t.tied_trials,
        recall_at_1=t.recall_at(1),
        recall_at_3=t.recall_at(3),
        recall_at_5=t.recall_at(5),
        recall_at_10=t.recall_at(10),
        recall_at_k=t.recall_at(t.k),
        seconds_p50=statistics.median(t.seconds) if t.seconds else None,
        seconds_p90=_quantile(t.seconds, 0.9),
    )


def _quantile(values: list[float], q: float) -> float | None:
    """The q-quantile by linear interpolation between the closest ranks; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    at = q * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)
