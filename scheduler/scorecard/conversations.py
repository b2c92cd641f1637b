"""The conversation part of a scorecard: per config, turn and conversation pass rates, pass^k
of conversations and of turns, and the turn at which failed conversations first failed; per
config, scenario and turn, that turn's verdicts (JUnit's case per turn). All read from the
trials' stored turns (docs/conversations.md, "Scorecards")."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp_farm.scheduler.scorecard.queries.conversations import conversation_trials
from mcp_farm.scheduler.statistics.rates import pass_hat_k
from mcp_farm.schema.scorecard import Conversations, TurnRow

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

ScenarioKey = tuple[str, str, str]
"""(model, config, scenario)."""


@dataclass
class TurnTally:
    """One turn of one conversation scenario of one config, over its repetitions."""

    graded: int = 0
    passes: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    detail: str = ""


@dataclass
class ScenarioTally:
    """One conversation scenario of one config, over its repetitions."""

    conversations: int = 0
    passed: int = 0
    turns: int = 0
    turns_passed: int = 0
    firsts: Counter[str] = field(default_factory=Counter)
    """Failed conversations by their first failing turn (1-based, as text)."""
    by_turn: dict[int, TurnTally] = field(default_factory=dict)
    """Per 0-based turn index."""


def tally(rows: Iterable[Any]) -> dict[ScenarioKey, ScenarioTally]:
    """Count conversation trials (conversation_trials' rows) per model, config and scenario."""
    found: dict[ScenarioKey, ScenarioTally] = defaultdict(ScenarioTally)
    for r in rows:
        turns = json.loads(r.turns_json)
        one = found[(r.model_id, r.config, r.scenario_id)]
        one.conversations += 1
        one.passed += r.outcome == "pass"
        one.turns += len(turns)
        one.turns_passed += sum(t.get("outcome") == "pass" for t in turns)
        failed = [t["index"] for t in turns if t.get("outcome") != "pass"]
        if failed:
            one.firsts[str(failed[0] + 1)] += 1
        for t in turns:
            turn = one.by_turn.setdefault(t["index"], TurnTally())
            turn.graded += 1
            turn.outcomes[t.get("outcome") or ""] += 1
            if t.get("outcome") == "pass":
                turn.passes += 1
            elif not turn.detail:
                turn.detail = t.get("detail") or t.get("outcome") or ""
    return found


def conversations(
    conn: Connection, sweep_id: str, skip_left: bool
) -> tuple[list[Conversations], list[TurnRow]]:
    """One entry per model × config that ran conversations (model and config order), and one
    row per config, conversation scenario and turn reached."""
    found = tally(conversation_trials(conn, sweep_id, skip_left))
    by_config: dict[tuple[str, str], list[ScenarioTally]] = defaultdict(list)
    for (model, config, _scenario), one in sorted(found.items()):
        by_config[(model, config)].append(one)
    turn_rows = [
        TurnRow(
            model=model,
            prompt=config,
            scenario=scenario,
            turn=index + 1,
            conversations=one.conversations,
            graded=turn.graded,
            passes=turn.passes,
            outcomes=dict(sorted(turn.outcomes.items())),
            detail=turn.detail,
        )
        for (model, config, scenario), one in sorted(found.items())
        for index, turn in sorted(one.by_turn.items())
    ]
    return [_config(m, c, tallies) for (m, c), tallies in by_config.items()], turn_rows


def _config(model: str, config: str, scenarios: list[ScenarioTally]) -> Conversations:
    n = sum(s.conversations for s in scenarios)
    passed = sum(s.passed for s in scenarios)
    turns = sum(s.turns for s in scenarios)
    turns_passed = sum(s.turns_passed for s in scenarios)
    firsts: Counter[str] = Counter()
    for s in scenarios:
        firsts.update(s.firsts)
    k = min(s.conversations for s in scenarios)
    hats = [pass_hat_k(s.conversations, s.passed, k) for s in scenarios]
    # A turn that a repetition never reached did not pass in it: the turn's n is the
    # scenario's conversations, not the times it was graded.
    turn_hats = [
        pass_hat_k(s.conversations, t.passes, k) for s in scenarios for t in s.by_turn.values()
    ]
    return Conversations(
        model=model,
        prompt=config,
        conversations=n,
        passed=passed,
        rate=passed / n if n else None,
        turns=turns,
        turns_passed=turns_passed,
        turn_rate=turns_passed / turns if turns else None,
        first_failing_turn=dict(sorted(firsts.items(), key=lambda i: int(i[0]))),
        k=k,
        pass_hat_k=sum(hats) / len(hats),
        turn_pass_hat_k=sum(turn_hats) / len(turn_hats) if turn_hats else None,
    )
