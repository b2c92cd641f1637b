"""The LLM judge: one rubric, one request, the assistant's prose, a score per criterion.

The judge is any model target the farm already speaks to. `openai` and `local` judges answer
under a JSON schema (the endpoint's `response_format`, llama.cpp's grammar), so even a tiny model
returns something readable; a `scripted` judge replays given scores (tests, and the anchor
gate's faithful and noisy judges). A reply that cannot be read is recorded with no score, never
guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mcp_farm.schema import (
    JudgeScore,
    ModelTarget,
    Rubric,
    TokenCounts,
)
from mcp_farm.workers.errors import AdapterError
from mcp_farm.workers.model.adapters import make_client
from mcp_farm.workers.model.safejson import (
    UnreadableJson,
    loads,
)
from mcp_farm.workers.model.toolspec import (
    JsonReply,
    Sampling,
)

RATIONALE_CHARS = 120


@dataclass(frozen=True)
class Shown:
    """What the judge sees: the request, the prose, and what the rubric lets it see."""

    request: str
    prose: str
    reference: str = ""
    keywords: tuple[str, ...] = ()
    citations: tuple[str, ...] = ()


@dataclass
class JudgeRun:
    """One judge run: scores per criterion (None where unreadable) and what it cost."""

    scores: list[JudgeScore]
    tokens: TokenCounts = field(default_factory=TokenCounts)
    estimated: bool = False
    """True when the token count is estimated (characters / 4), not reported."""


class Judge(Protocol):
    model_id: str
    pins: dict[str, str]

    async def judge(self, rubric: Rubric, shown: Shown, run: int, seed: int) -> JudgeRun: ...


def verdict_schema(rubric: Rubric) -> dict[str, Any]:
    """The reply's JSON schema: per criterion an integer on its scale and a short reason."""
    properties = {
        c.id: {
            "type": "object",
            "properties": {
                "score": {"type": "integer", "enum": list(range(c.scale + 1))},
                "why": {"type": "string", "maxLength": RATIONALE_CHARS},
            },
            "required": ["score", "why"],
        }
        for _step, c in rubric.criteria
    }
    return {"type": "object", "properties": properties, "required": list(properties)}


def judge_messages(rubric: Rubric, shown: Shown) -> list[dict[str, str]]:
    """The judge's conversation: instructions and criteria, then the material to grade."""
    criteria = "\n".join(
        f"- {c.id} (0-{c.scale}, step {step}): {c.description}" for step, c in rubric.criteria
    )
    system = (
        f"{rubric.instructions.strip()}\n\nScore each criterion with an integer from 0 to its "
        f"maximum and give a one-sentence reason. Reply with JSON only, one key per criterion: "
        f'{{"<criterion>": {{"score": <int>, "why": "<reason>"}}, ...}}\n\nCriteria:\n{criteria}'
    )
    parts = [f"The developer asked:\n{shown.request}", f"The answer to grade:\n{shown.prose}"]
    if "reference" in rubric.judge_sees and shown.reference:
        parts.append(f"A reference answer (for you only):\n{shown.reference}")
    if "keywords" in rubric.judge_sees and shown.keywords:
        parts.append("Terms a complete answer mentions: " + ", ".join(shown.keywords))
    if "citations" in rubric.judge_sees and shown.citations:
        parts.append("Locations a good answer cites: " + ", ".join(shown.citations))
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def unreadable(rubric: Rubric, run: int, reason: str) -> JudgeRun:
    """A run whose judge could not be asked (endpoint down, model missing): no scores."""
    scores = read_verdict("", rubric, run)
    return JudgeRun(scores=[s.model_copy(update={"rationale": reason}) for s in scores])


def read_verdict(text: str, rubric: Rubric, run: int) -> list[JudgeScore]:
    """Scores from the judge's reply; a criterion that is missing, off-scale or unreadable gets
    no score (and the reason says so)."""
    try:
        data = loads(text)
    except UnreadableJson:
        data = None
    found = data if isinstance(data, dict) else {}
    scores = []
    for step, criterion in rubric.criteria:
        entry = found.get(criterion.id)
        raw = entry.get("score") if isinstance(entry, dict) else entry
        why = str(entry.get("why", ""))[:RATIONALE_CHARS] if isinstance(entry, dict) else ""
        value = _on_scale(raw, criterion.scale)
        if value is None:
            why = why or ("unreadable reply" if data is None else "no score on the scale")
        scores.append(
            JudgeScore(
                run=run,
                step=step,
                criterion=criterion.id,
                score=value,
                normalized=None if value is None else value / criterion.scale,
                rationale=why,
            )
        )
    return scores


def _on_scale(raw: object, scale: int) -> float | None:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    return float(raw) if 0 <= raw <= scale else None


class ModelJudge:
    """A judge served by a model adapter that can answer under a JSON schema."""

    def __init__(
        self,
        target: ModelTarget,
        cache_dir: Path,
        temperature: float,
        max_tokens: int,
        threads: int = 2,
    ):
        client = make_client(target, cache_dir, threads)
        if not hasattr(client, "complete_json"):
            raise AdapterError(
                f"judge {target.id!r}: the {target.adapter} adapter cannot judge "
                "(use openai, local or scripted)"
            )
        self.client: Any = client
        self.model_id = target.id
        self.pins = {**target.pins, **client.pins}
        self.temperature = temperature
        self.max_tokens = max_tokens

    async def judge(self, rubric: Rubric, shown: Shown, run: int, seed: int) -> JudgeRun:
        sampling = Sampling(temperature=self.temperature, max_tokens=self.max_tokens, seed=seed)
        reply: JsonReply = await self.client.complete_json(
            judge_messages(rubric, shown), verdict_schema(rubric), sampling
        )
        return JudgeRun(scores=read_verdict(reply.text, rubric, run), tokens=reply.tokens)


class ScriptedJudge:
    """Replays scores. Script items: `{"scores": {criterion: score}, "why": "…"}`, optionally
    with `"match": "text"` (used only for answers containing it) and `"run": k` (only for run k);
    the first item that fits is used. No item fitting gives an unreadable verdict."""

    def __init__(self, target: ModelTarget) -> None:
        self.script: list[dict[str, Any]] = target.script or []
        self.model_id = target.id
        self.pins = {"adapter": "scripted", **target.pins}

    async def judge(self, rubric: Rubric, shown: Shown, run: int, seed: int) -> JudgeRun:
        item = next((i for i in self.script if _fits(i, shown.prose, run)), None)
        text = "" if item is None else json.dumps(_as_reply(item))
        prompt = sum(len(m["content"]) for m in judge_messages(rubric, shown))
        tokens = TokenCounts(prompt=prompt // 4, completion=len(text) // 4)
        return JudgeRun(scores=read_verdict(text, rubric, run), tokens=tokens, estimated=True)


def _fits(item: dict[str, Any], prose: str, run: int) -> bool:
    return str(item.get("match", "")) in prose and item.get("run", run) == run


def _as_reply(item: dict[str, Any]) -> dict[str, Any]:
    why = str(item.get("why", "scripted"))
    return {k: {"score": v, "why": why} for k, v in dict(item.get("scores", {})).items()}


class BrokenJudge:
    """A judge that could not be set up on this worker (e.g. its model package is missing):
    every run fails with the reason, which scoring records instead of a score."""

    def __init__(self, target: ModelTarget, reason: str) -> None:
        self.model_id = target.id
        self.pins = dict(target.pins)
        self.reason = reason

    async def judge(self, rubric: Rubric, shown: Shown, run: int, seed: int) -> JudgeRun:
        raise AdapterError(self.reason)


def make_judge(
    target: ModelTarget, cache_dir: Path, temperature: float, max_tokens: int, threads: int = 2
) -> Judge:
    if target.adapter == "scripted":
        return ScriptedJudge(target)
    try:
        return ModelJudge(target, cache_dir, temperature, max_tokens, threads)
    except AdapterError as exc:
        return BrokenJudge(target, str(exc))
