"""The anchor gate shows the judge exactly what scoring shows it for the same answer: the
request, the prose, and the scenario's reference answer, terms and citations."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import find_scenario
from mcp_farm.scenarios.anchors import ANCHORS_DIR, SHOWN_FROM_SPEC, load_anchors
from mcp_farm.schema import (
    AnswerSpec,
    JudgeSettings,
    Message,
    ModelTarget,
    Rubric,
    Settings,
)
from mcp_farm.schema.tasks.messages import AnchorJudgingRequest
from mcp_farm.workers.answer import rescore
from mcp_farm.workers.answer.judge import JudgeRun, Shown, read_verdict
from mcp_farm.workers.answer.scoring import Transcript, score_answer, shown_to_judge


class Recording:
    """A judge that keeps what it was shown and scores nothing."""

    model_id = "recording"
    pins: dict[str, str] = {}

    def __init__(self) -> None:
        self.shown: list[Shown] = []

    async def judge(self, rubric: Rubric, shown: Shown, run: int, seed: int) -> JudgeRun:
        self.shown.append(shown)
        return JudgeRun(scores=read_verdict("", rubric, run))


SETTINGS = JudgeSettings(
    model=ModelTarget(id="recording", adapter="scripted", model="r", script=[]), runs=2
)


def test_the_gate_and_scoring_give_the_judge_the_same_material(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gate = Recording()
    monkeypatch.setattr(rescore, "judge_for", lambda _judge, _settings: gate)
    request = AnchorJudgingRequest(folder=str(ANCHORS_DIR / "code"), judge=SETTINGS)
    anyio.run(rescore._judge_anchors, request, settings)

    anchors = load_anchors(ANCHORS_DIR / "code")
    scoring = Recording()
    for anchor in anchors.anchors:
        transcript = [
            Message(role="system", content="You answer questions about code."),
            Message(role="user", content=anchor.request),
            Message(role="assistant", content=anchor.answer),
        ]
        trial: Any = Transcript(
            trial_id="t",
            sweep_id="s",
            outcome="pass",
            transcript=transcript,
            calls=[],
            latency_s=1.0,
            tokens_prompt=0,
            tokens_completion=0,
            final_answer=anchor.answer,
            seed=0,
        )
        anyio.run(
            partial(
                score_answer,
                trial=trial,
                scenario=find_scenario("code", anchor.scenario),
                suite="code",
                toolset=None,
                settings=SETTINGS,
                judge=scoring,
                repos=tmp_path / "repos",
                scoring="s",
            )
        )
    assert len(gate.shown) == len(scoring.shown) == 2 * len(anchors.anchors)
    assert gate.shown == scoring.shown
    # And that material holds what scoring relies on: the reference and the expected terms.
    assert all(s.reference and s.keywords for s in gate.shown)


def test_the_anchor_lock_seals_every_field_of_the_answer_spec_the_judge_is_shown() -> None:
    # The lock (scenarios layer) cannot call shown_to_judge (workers layer); this holds its
    # list of sealed fields to what shown_to_judge really takes from a spec.
    spec = AnswerSpec(reference="r", keywords=["k"], citations=["a.py:1"], rubric="code-answer")
    shown = shown_to_judge(spec, "request", "prose")
    other = {str: "changed", list: ["changed"]}
    taken = {
        name
        for name in AnswerSpec.model_fields
        if shown_to_judge(
            spec.model_copy(update={name: other[type(getattr(spec, name))]}), "request", "prose"
        )
        != shown
    }
    assert taken == set(SHOWN_FROM_SPEC)
