"""Scoring an answer in two layers that are never merged.

Fairness (did the developer get a better answer): keyword coverage of the prose, the judge's
quality score, citation grounding at the pinned commit, efficiency. Adoption (how fluently the
agent used the attached tools): tool fluency and discoverability; structurally zero for the
baseline arm. Only the assistant's prose is scored; tool calls and results are the audit stream.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from mcp_farm.scenarios import (
    FIXTURES_DIR,
    load_rubric,
    load_suite,
)
from mcp_farm.scenarios.coderepo import checkout
from mcp_farm.schema import (
    AnswerScore,
    AnswerSpec,
    JudgeScore,
    JudgeSettings,
    Message,
    Scenario,
    ToolCallRecord,
    ToolSet,
)
from mcp_farm.workers.answer import (
    coverage,
    extract,
    grounding_rate,
    partition,
    verify,
)
from mcp_farm.workers.answer.judge import (
    RATIONALE_CHARS,
    Judge,
    Shown,
    unreadable,
)
from mcp_farm.workers.errors import (
    AdapterError,
    InfraError,
)

CHARS_PER_TOKEN = 4
"""Where no tokenizer count exists (tool I/O), tokens are estimated from characters."""


@dataclass(frozen=True)
class Transcript:
    """What a finished trial recorded that scoring reads (fresh, or loaded from the database)."""

    trial_id: str
    sweep_id: str
    outcome: str
    transcript: list[Message]
    calls: list[ToolCallRecord]
    latency_s: float
    tokens_prompt: int | None
    tokens_completion: int | None
    """Both None where not measured (an agent whose model calls did not pass the farm)."""
    final_answer: str | None
    seed: int


def adoption(
    calls: list[ToolCallRecord], outcome: str, toolset: ToolSet | None, settings: JudgeSettings
) -> tuple[float | None, float | None, float]:
    """(tool fluency, discoverability, adoption). The baseline has no tools to adopt: None,
    None and a structural 0."""
    if toolset is not None and toolset.baseline:
        return None, None, 0.0
    attempts = len(calls) + (1 if outcome == "format_error" else 0)
    good = [c for c in calls if c.ok and c.server is not None]
    fluency = len(good) / attempts if attempts else 0.0
    found = 1.0 if good else 0.0
    w = settings.weights.adoption
    total = w.fluency + w.discoverability
    value = (w.fluency * fluency + w.discoverability * found) / total if total else 0.0
    return fluency, found, value


def efficiency(trial: Transcript, time_limit_s: float, budget: int) -> float:
    """Completeness × the mean of a time part and a token part, each 1 at zero cost and 0 at
    the scenario's time limit / the token budget; the time part alone where the tokens were
    not measured (never as if none were spent). Judging is not part of it."""
    complete = 1.0 if (trial.final_answer or "").strip() else 0.0
    time_part = max(0.0, 1.0 - trial.latency_s / time_limit_s)
    if trial.tokens_prompt is None or trial.tokens_completion is None:
        return complete * time_part
    token_part = max(0.0, 1.0 - (trial.tokens_prompt + trial.tokens_completion) / budget)
    return complete * (time_part + token_part) / 2


def fairness(parts: dict[str, float | None], settings: JudgeSettings) -> float:
    """The weighted mean of the fairness parts that exist (a part without data, e.g. no judge,
    gives its weight to the others)."""
    w = settings.weights.fairness.model_dump()
    present = {k: v for k, v in parts.items() if v is not None}
    total = sum(w[k] for k in present)
    return sum(w[k] * v for k, v in present.items()) / total if total else 0.0


def _tool_io_tokens(calls: list[ToolCallRecord]) -> int:
    chars = sum(len(json.dumps(c.arguments)) + len(c.result_text or c.error or "") for c in calls)
    return chars // CHARS_PER_TOKEN


async def judge_runs(
    judge: Judge, settings: JudgeSettings, rubric_id: str, shown: Shown, seed: int
) -> tuple[list[JudgeScore], int, bool, str, float]:
    """`settings.runs` judge runs (run r with seed `seed * 100 + r`): every score, the tokens
    spent, whether that count is estimated, the rubric's hash, and the seconds it took. A judge
    that fails leaves that run's scores empty with the reason."""
    rubric, rubric_hash = load_rubric(rubric_id)
    scores: list[JudgeScore] = []
    tokens, estimated = 0, False
    started = time.perf_counter()
    for run in range(settings.runs):
        try:
            verdict = await judge.judge(rubric, shown, run, seed * 100 + run)
        except (InfraError, AdapterError) as exc:
            # The trial itself is fine; its judgement is missing, and says why.
            verdict = unreadable(rubric, run, f"judge failed: {exc}"[:RATIONALE_CHARS])
        scores += verdict.scores
        tokens += verdict.tokens.prompt + verdict.tokens.completion
        estimated = estimated or verdict.estimated
    return scores, tokens, estimated, rubric_hash, time.perf_counter() - started


async def score_answer(
    *,
    trial: Transcript,
    scenario: Scenario,
    suite: str,
    toolset: ToolSet | None,
    settings: JudgeSettings,
    judge: Judge | None,
    repos: Path,
    scoring: str,
) -> AnswerScore:
    """Score one trial's answer under `settings`, judging with `judge` when there is one."""
    spec = scenario.answer
    assert spec is not None, "only scenarios with an `answer` are scored"
    prose = partition(trial.transcript, trial.outcome == "format_error").prose
    suite_def = load_suite(suite)
    cited = []
    if suite_def.repo is not None:
        root = checkout(FIXTURES_DIR / suite_def.repo.fixture, suite_def.repo.commit, repos)
        cited = verify(extract(prose), root, settings.tolerance)
    rate = grounding_rate(cited)
    keywords = coverage(prose, spec.keywords)
    rubric_id = settings.rubric or spec.rubric or suite_def.rubric or ""
    judged: list[JudgeScore] = []
    verification, estimated, rubric_hash, judge_s = 0, False, "", 0.0
    if judge is not None and rubric_id:
        shown = shown_to_judge(spec, _request(trial.transcript), prose)
        judged, verification, estimated, rubric_hash, judge_s = await judge_runs(
            judge, settings, rubric_id, shown, trial.seed
        )
    readable = [s.normalized for s in judged if s.normalized is not None]
    quality = sum(readable) / len(readable) if readable else None
    # An answer that cites nothing where citations are expected earns no grounding.
    grounding = rate if rate is not None else (0.0 if spec.citations else None)
    eff = efficiency(trial, scenario.time_limit_s, settings.token_budget)
    fluency, found, adopted = adoption(trial.calls, trial.outcome, toolset, settings)
    parts = {"keywords": keywords, "judge": quality, "grounding": grounding, "efficiency": eff}
    return AnswerScore(
        trial_id=trial.trial_id,
        sweep_id=trial.sweep_id,
        scoring_id=scoring,
        toolset=toolset.id if toolset else "",
        baseline=bool(toolset and toolset.baseline),
        outcome=trial.outcome,
        keyword_coverage=keywords,
        citations=cited,
        grounding_rate=rate,
        judge_quality=quality,
        efficiency=eff,
        fairness=fairness(parts, settings),
        tool_fluency=fluency,
        discoverability=found,
        adoption=adopted,
        tokens_reasoning=trial.tokens_completion,
        tokens_tool_io=_tool_io_tokens(trial.calls),
        tokens_verification=verification,
        estimated=["tool_io", *(["verification"] if estimated else [])],
        judge_model=judge.model_id if judge else "",
        judge_pins=judge.pins if judge else {},
        rubric_id=rubric_id if judge else "",
        rubric_hash=rubric_hash,
        judge_s=judge_s,
        judgements=judged,
    )


def shown_to_judge(spec: AnswerSpec, request: str, prose: str) -> Shown:
    """What the judge is given for one answer of a scenario: the request, the prose, and the
    scenario's reference answer, terms and citations (the rubric says which it sees). Scoring
    and the anchor gate both build it here, so the gate guards what scoring does."""
    return Shown(
        request=request,
        prose=prose,
        reference=spec.reference,
        keywords=tuple(spec.keywords),
        citations=tuple(spec.citations),
    )


def _request(transcript: list[Message]) -> str:
    """The user's request: the last user message before the agent's first reply."""
    users = [m.content for m in transcript if m.role == "user"]
    return users[-1] if users else ""
