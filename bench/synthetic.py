"""Synthetic sweeps: trial and tool-call rows drawn from known pass rates, loaded fast.

Used by the scorecard benchmark (10k–1M trials) and by the statistics tests, which need sweeps
whose true rates they know. PostgreSQL is loaded with COPY; SQLite with executemany.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy import insert
from sqlalchemy.engine import Connection, Engine

from mcp_farm.schema.db import (
    SweepRow,
    ToolCallRow,
    TrialRow,
)

FINISHED = datetime(2026, 11, 1, tzinfo=UTC)
"""When the first synthetic trial finished; each later one a second after the one before."""
OUTCOME_FAILURES = ("wrong_tool", "wrong_params", "no_tool_call", "format_error")
TIERS = ("simple", "moderate", "complex")
TOOLS = tuple(f"tool_{i:02d}" for i in range(24))

TRIAL_COLUMNS = [
    "trial_id",
    "sweep_id",
    "model_id",
    "prompt_id",
    "scenario_id",
    "scenario_version",
    "tier",
    "expected_tools",
    "repetition",
    "variant",
    "status",
    "queue",
    "attempts",
    "outcome",
    "detail",
    "latency_s",
    "first_token_s",
    "model_s",
    "tokens_prompt",
    "tokens_completion",
    "turns",
    "transcript_json",
    "provenance_json",
    "payload_json",
    "finished_at",
]
CALL_COLUMNS = [
    "trial_id",
    "idx",
    "sweep_id",
    "model_id",
    "prompt_id",
    "toolset",
    "server",
    "tool",
    "arguments_json",
    "ok",
    "result_digest",
    "latency_s",
]


@dataclass(frozen=True)
class SyntheticScenario:
    id: str
    tier: str
    tools: tuple[str, ...]


def scenarios(count: int, seed: int = 0) -> list[SyntheticScenario]:
    """`count` scenarios spread over the tiers, each expecting one to three tools."""
    rng = np.random.default_rng(seed)
    found = []
    for i in range(count):
        tier = TIERS[i % 3]
        picks = rng.choice(len(TOOLS), size=1 + i % 3, replace=False)
        found.append(SyntheticScenario(f"s{i:04d}", tier, tuple(TOOLS[j] for j in picks)))
    return found


RateFn = Callable[[str, str, SyntheticScenario], float]
"""(model, prompt, scenario) → the true pass probability."""


def trials(
    sweep_id: str,
    configs: list[tuple[str, str]],
    picked: list[SyntheticScenario],
    repetitions: int,
    rate: RateFn,
    seed: int,
) -> Iterator[tuple[dict[str, object], list[dict[str, object]]]]:
    """Every trial of the synthetic sweep with its tool calls (one call per expected tool)."""
    rng = np.random.default_rng(seed)
    provenance = json.dumps({"farm_version": "synthetic", "git_commit": "0" * 12, "model_pins": {}})
    finished = 0
    for model, prompt in configs:
        for scenario in picked:
            p = rate(model, prompt, scenario)
            passed = rng.random(repetitions) < p
            latency = rng.lognormal(0.5, 0.6, repetitions)
            failure = rng.integers(0, len(OUTCOME_FAILURES), repetitions)
            for rep in range(repetitions):
                trial_id = f"{sweep_id}:{model}:{prompt}:{scenario.id}:{rep}"
                row: dict[str, object] = {
                    "trial_id": trial_id,
                    "sweep_id": sweep_id,
                    "model_id": model,
                    "prompt_id": prompt,
                    "scenario_id": scenario.id,
                    "scenario_version": 1,
                    "tier": scenario.tier,
                    "expected_tools": json.dumps(list(scenario.tools)),
                    "repetition": rep,
                    "variant": rep % 3,
                    "status": "done",
                    "queue": "embedded",
                    "attempts": 1,
                    "outcome": "pass" if passed[rep] else OUTCOME_FAILURES[failure[rep]],
                    "detail": "",
                    "latency_s": float(latency[rep]),
                    "first_token_s": float(latency[rep]) / 4,
                    "model_s": float(latency[rep]) * 0.9,
                    "tokens_prompt": 400,
                    "tokens_completion": 40,
                    "turns": 2,
                    "transcript_json": "[]",
                    "provenance_json": provenance,
                    "payload_json": "{}",
                    "finished_at": FINISHED + timedelta(seconds=finished),
                }
                finished += 1
                calls: list[dict[str, object]] = [
                    {
                        "trial_id": trial_id,
                        "idx": i,
                        "sweep_id": sweep_id,
                        "model_id": model,
                        "prompt_id": prompt,
                        "toolset": "",
                        "server": "synthetic",
                        "tool": tool,
                        "arguments_json": "{}",
                        "ok": True,
                        "result_digest": "",
                        "latency_s": float(latency[rep]) / 100,
                    }
                    for i, tool in enumerate(scenario.tools)
                ]
                yield row, calls


SQLITE_BATCH = 10_000


def _insert_batches(
    conn: Connection, trial_batch: list[dict[str, object]], call_batch: list[dict[str, object]]
) -> None:
    if trial_batch:
        conn.execute(insert(TrialRow), trial_batch)
    if call_batch:
        conn.execute(insert(ToolCallRow), call_batch)
    trial_batch.clear()
    call_batch.clear()


def load(
    engine: Engine,
    sweep_id: str,
    rows: Iterator[tuple[dict[str, object], list[dict[str, object]]]],
    name: str = "synthetic",
) -> int:
    """Insert the sweep row and every trial and call; returns the number of trials."""
    sweep = {
        "sweep_id": sweep_id,
        "name": name,
        "spec_json": json.dumps({"name": name, "models": [], "prompts": []}),
        "trial_count": 0,
        "created_at": datetime.now(UTC),
        "status": "active",
    }
    with engine.begin() as conn:
        conn.execute(insert(SweepRow).values(sweep))
    if engine.dialect.name != "postgresql":
        count = 0
        trial_batch: list[dict[str, object]] = []
        call_batch: list[dict[str, object]] = []
        with engine.begin() as conn:
            # In batches (one executemany each): a million trials load in minutes, not hours.
            for row, calls in rows:
                trial_batch.append(row)
                call_batch += calls
                count += 1
                if len(trial_batch) >= SQLITE_BATCH:
                    _insert_batches(conn, trial_batch, call_batch)
            _insert_batches(conn, trial_batch, call_batch)
        return count
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        count = 0
        pending: list[dict[str, object]] = []
        with cursor.copy(f"COPY trial ({', '.join(TRIAL_COLUMNS)}) FROM STDIN") as copy:
            for row, calls in rows:
                copy.write_row([row[c] for c in TRIAL_COLUMNS])
                pending += calls
                count += 1
        with cursor.copy(f"COPY tool_call ({', '.join(CALL_COLUMNS)}) FROM STDIN") as copy:
            for call in pending:
                copy.write_row([call[c] for c in CALL_COLUMNS])
        cursor.execute("ANALYZE trial")
        cursor.execute("ANALYZE tool_call")
        raw.commit()
    finally:
        raw.close()
    return count
