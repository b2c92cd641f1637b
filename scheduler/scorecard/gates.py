"""Gates: thresholds a sweep declares, checked against its scorecard (`farm report --gate`)."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_farm.schema import Gate
from mcp_farm.schema.scorecard import (
    Conversations,
    Curve,
    Row,
    Scorecard,
)

# Metrics where "no value" means nothing to judge rather than nothing measured: a tool the model
# never called has no latency; a row where no call failed has nothing to recover from.
_SKIP_WHEN_EMPTY = ("p50_s", "p95_s", "p99_s", "recovery_rate")


@dataclass(frozen=True)
class Breach:
    gate: Gate
    row: Row | Conversations | Curve | None
    """The scorecard row, or a config's conversation block; None when the gate matched no row
    at all."""
    value: float | None

    def explain(self) -> str:
        if self.row is None:
            return f"{self.gate.rule_text()}: no scorecard row matches it"
        key = self.row.key if isinstance(self.row, Row) else ""
        if isinstance(self.row, Curve):
            key = f"descriptions {self.row.descriptions}, names {self.row.names}"
        where = f"{self.row.model}/{self.row.prompt}" + (f" {key}" if key else "")
        shown = "no data" if self.value is None else f"{self.value:.3g}"
        return f"{self.gate.rule_text()}: {where} is {shown}"


def metric(row: Row, name: str) -> float | None:
    """The value a gate compares: a rate (0..1) or a latency in seconds."""
    if name == "pass_rate":
        return row.rate
    if name == "first_try_rate":
        return row.first_rate
    if name == "pass_low":
        return row.low if row.n else None
    if name == "pass_hat_k":
        return row.pass_hat_k
    if name == "pass_at_k":
        return row.pass_at_k
    if name == "recovery_rate":
        return row.recovery_rate
    return {"p50_s": row.latency.p50, "p95_s": row.latency.p95, "p99_s": row.latency.p99}[name]


def drop(curve: Curve, at: str | None) -> float | None:
    """The pass rate at the curve's fewest tools minus that at tool count `at` (the most tools
    when None); None when either was not measured."""
    base = curve.points[0]
    end = (
        curve.points[-1]
        if at is None
        else next((p for p in curve.points if str(p.tool_count) == at), None)
    )
    if end is None or base.rate is None or end.rate is None:
        return None
    return base.rate - end.rate


def _checked(card: Scorecard, gate: Gate) -> list[tuple[Row | Conversations | Curve, float | None]]:
    """The rows a gate applies to, each with the value it compares."""
    if gate.metric == "tool_count_slope":
        return [(c, c.slope) for c in card.robustness]
    if gate.metric == "tool_count_drop":
        return [(c, drop(c, gate.only)) for c in card.robustness]
    if gate.metric == "conversation_pass_rate":
        return [(c, c.rate) for c in card.conversations]
    if gate.metric == "turn_pass_rate":
        return [(c, c.turn_rate) for c in card.conversations]
    rows = [r for r in card.of(gate.per) if gate.only is None or r.key == gate.only]
    return [(r, metric(r, gate.metric)) for r in rows]


def check_gates(card: Scorecard, gates: list[Gate]) -> tuple[int, list[Breach]]:
    """How many rows were checked, and every (gate, row) that fails.

    A row with no pass-rate data fails (a gate must not pass because nothing was measured); a
    row with no latency sample (a tool the model never called) is not checked for latency, nor
    one where no call failed for recovery. A conversation gate on a sweep without conversations
    matches no row, and fails.
    """
    checked = 0
    breaches: list[Breach] = []
    for gate in gates:
        rows = _checked(card, gate)
        if not rows:
            breaches.append(Breach(gate, None, None))
        for row, value in rows:
            if value is None and gate.metric in _SKIP_WHEN_EMPTY:
                continue
            checked += 1
            low_ok = gate.min is None or (value is not None and value >= gate.min)
            high_ok = gate.max is None or (value is not None and value <= gate.max)
            if not (low_ok and high_ok):
                breaches.append(Breach(gate, row, value))
    return checked, breaches
