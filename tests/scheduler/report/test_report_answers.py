"""The answer-quality section in the Markdown, JUnit and HTML reports: fairness and adoption side
by side and never summed, the judge's variance, the unverified banner, and no change at all to
the reports of a scorecard without answer quality."""

from __future__ import annotations

import html
import re
from xml.etree import ElementTree as ET

from mcp_farm.scheduler.report.formats import (
    to_junit,
    to_markdown,
)
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.schema.scorecard import (
    AnswerQuality,
    AnswerRow,
    ConfigExtras,
    JudgeVariance,
    Latency,
    Provenance,
    Ranked,
    Row,
    Scorecard,
)

CONFIGS = [
    ("big", "native+baseline"),
    ("big", "native+symbols"),
    ("small", "native+baseline"),
    ("small", "native+symbols"),
]
SCENARIOS = ["s0001", "s0002", "s0003"]
LATENCY_BINS = [0.5, 1.0, 2.5, 5.0]
# Fairness and adoption per configuration; 0.62 + 0.31 = 93% must never be printed.
LAYERS = {
    ("big", "native+baseline"): (0.55, 0.0),
    ("big", "native+symbols"): (0.62, 0.31),
    ("small", "native+baseline"): (0.35, 0.0),
    ("small", "native+symbols"): (0.41, 0.47),
}
JUDGE = "judge<b>model</b>"


def _row(dimension: str, model: str, prompt: str, key: str, n: int, passes: int) -> Row:
    return Row(
        dimension=dimension,  # type: ignore[arg-type]
        model=model,
        prompt=prompt,
        key=key,
        n=n,
        passes=passes,
        rate=passes / n if n else None,
        low=0.1,
        high=0.9,
        k=1,
        pass_hat_k=None,
        pass_at_k=None,
        latency=Latency(n=n, p50=1.2, p95=3.0, p99=4.0),
        outcomes={"pass": passes, "wrong_tool": n - passes},
    )


def scorecard(answers: AnswerQuality | None) -> Scorecard:
    """Four configurations (two models, each with the baseline tool set and one other), three
    scenarios each with one failing repetition in the second."""
    rows = []
    for model, prompt in CONFIGS:
        rows += [
            _row("config", model, prompt, "", 12, 11),
            _row("tool", model, prompt, "find_symbol", 12, 11),
            _row("tool", model, prompt, "read_file", 8, 8),
        ]
        rows += [
            _row("scenario", model, prompt, s, 4, 4 - (i == 1)) for i, s in enumerate(SCENARIOS)
        ]
    extras = [
        ConfigExtras(
            model=model,
            prompt=prompt,
            first_token=Latency(),
            tokens_per_s=None,
            tokens_prompt=4800,
            tokens_completion=480,
            histogram=[1, 3, 5, 2, 1],
        )
        for model, prompt in CONFIGS
    ]
    provenance = Provenance(
        sweep_name="code",
        spec_json="{}",
        farm_versions=["0.1.0"],
        git_commits=["0123456789ab"],
        nodes=["node-1"],
        model_pins={},
        aggregator_version="1",
    )
    return Scorecard(
        sweep_id="sw-code",
        built_at="2025-01-01T00:00:00Z",
        total=48,
        done=48,
        rows=rows,
        extras=extras,
        tool_calls=[],
        latency_bins=LATENCY_BINS,
        provenance=provenance,
        answers=answers,
    )


def _answer_row(model: str, prompt: str) -> AnswerRow:
    fairness, adoption = LAYERS[(model, prompt)]
    baseline = prompt.endswith("+baseline")
    return AnswerRow(
        dimension="config",
        model=model,
        prompt=prompt,
        toolset=prompt.split("+")[1],
        baseline=baseline,
        n=12,
        scenarios=3,
        fairness=fairness,
        fairness_low=fairness - 0.08,
        fairness_high=fairness + 0.08,
        keyword_coverage=0.7,
        judge_quality=0.58,
        grounding_rate=0.8,
        efficiency=0.5,
        adoption=adoption,
        tool_fluency=None if baseline else 0.66,
        discoverability=None if baseline else 0.28,
        grounded=8,
        unresolved=1 + baseline,
        hallucinated=1,
        tokens_reasoning=1200,
        tokens_tool_io=0 if baseline else 3400,
        tokens_verification=210,
        estimated=["reasoning"],
        model_s=1.5,
        judge_s=0.4,
    )


def answer_quality(*, verified: bool) -> AnswerQuality:
    rows = [_answer_row(model, prompt) for model, prompt in CONFIGS]
    base = {r.model: r.fairness for r in rows if r.baseline}
    ranking = [
        Ranked(
            model=r.model,
            prompt=r.prompt,
            toolset=r.toolset,
            baseline=r.baseline,
            fairness=r.fairness,
            adoption=r.adoption,
            vs_baseline=None if r.baseline else (r.fairness or 0) - (base[r.model] or 0),
        )
        for r in sorted(rows, key=lambda r: -(r.fairness or 0))
    ]
    judge = JudgeVariance(
        judge=JUDGE,
        rubric_id="code-answer",
        rubric_hash="abc123",
        trials=24,
        runs=3,
        unreadable=1,
        sigma_criterion=0.12,
        sigma_step=0.07,
        sigma_scenario=0.03,
        icc1=0.71,
        resolution=0.05,
        resolution_80=0.0714,
        noise_floor=0.1,
        per_criterion={"correct": 0.1, "cites": 0.14},
        anchors="verified" if verified else "unverified",
        anchor_rho=0.82 if verified else None,
    )
    return AnswerQuality(
        scoring_id="score-1",
        kind="run",
        grader_version="1",
        judge=JUDGE,
        weights={"fairness": {"keywords": 0.3, "judge": 0.4, "grounding": 0.2, "efficiency": 0.1}},
        rows=rows,
        judges=[judge],
        ranking=ranking,
        verified=verified,
    )


def test_markdown_shows_fairness_and_adoption_side_by_side_and_never_their_sum() -> None:
    md = to_markdown(scorecard(answer_quality(verified=True)))
    section = md[md.index("## Answer quality") :]
    layers = next(line for line in section.splitlines() if line.startswith("| model | config"))
    heads = [h.strip() for h in layers.strip("|").split("|")]
    assert heads.index("fairness (95% CI)") < heads.index("adoption")
    assert not {"total", "combined", "overall", "score"} & {h.lower() for h in heads}
    assert "93%" not in md, "fairness + adoption was printed"
    baseline = next(line for line in section.splitlines() if "native+baseline (baseline)" in line)
    assert "0 (structural)" in baseline
    assert "| +7.0pt |" in section  # big/native+symbols: 62% against its baseline's 55%
    assert "~1,200" in section and "| 3,400 |" in section  # estimated phases only get ~
    assert "| 0.120 | 0.070 | 0.030 | 0.71 | 0.050 | 0.071 | 0.10 | verified ρ=0.82 |" in section
    assert "Unverified ranking" not in md


def test_markdown_carries_the_unverified_note_when_the_anchor_gate_has_not_passed() -> None:
    md = to_markdown(scorecard(answer_quality(verified=False)))
    assert "> **Unverified ranking.** ranking unverified: the anchor gate has not passed" in md


def test_junit_suites_carry_answer_properties_before_their_test_cases() -> None:
    root = ET.fromstring(to_junit(scorecard(answer_quality(verified=False))))
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {f"{m}/{p}" for m, p in CONFIGS}
    for (model, prompt), (fairness, adoption) in LAYERS.items():
        suite = suites[f"{model}/{prompt}"]
        assert next(iter(suite)).tag == "properties"
        assert len(suite.findall("testcase")) == len(SCENARIOS)
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert float(props["answer.fairness"]) == fairness
        assert float(props["answer.adoption"]) == adoption
        assert props["answer.grounding_rate"] == "0.8000"
        assert props["answer.judge_quality"] == "0.5800"
        assert props["answer.baseline"] == str(prompt.endswith("+baseline")).lower()
        assert props["answer.verified"] == "false"
        sigmas = {
            level: props[f"answer.judge.code-answer.sigma_{level}"]
            for level in ("criterion", "step", "scenario")
        }
        assert sigmas == {"criterion": "0.1200", "step": "0.0700", "scenario": "0.0300"}
        assert "0.9300" not in props.values()


def test_a_card_without_answers_renders_markdown_and_junit_exactly_as_before() -> None:
    plain, scored = scorecard(None), scorecard(answer_quality(verified=False))
    md = to_markdown(plain)
    assert "Answer quality" not in md
    assert to_markdown(scored).startswith(md.rstrip("\n"))
    junit = to_junit(plain)
    # Without answers, a suite's properties are its rates only (pass and first-try rate).
    assert "answer." not in junit and 'name="first_try_rate"' in junit
    without = re.sub(r'\n\s*<property name="answer\.[^>]*/>', "", to_junit(scored))
    assert without == junit


def test_html_has_the_three_answer_charts_and_the_banner_only_when_unverified() -> None:
    unverified = to_html(scorecard(answer_quality(verified=False)))
    for chart in ("answer-fairness", "answer-grounding", "answer-judge"):
        assert f'<div id="{chart}"></div>' in unverified
    assert '<div id="unverified" role="alert"' in unverified
    assert "Unverified ranking:" in unverified
    verified = to_html(scorecard(answer_quality(verified=True)))
    assert 'id="answer-fairness"' in verified and 'id="unverified"' not in verified
    assert "<td>0 (structural)</td>" not in verified  # numeric cells are right-aligned
    assert '<td class="n">0 (structural)</td>' in verified


def test_html_escapes_the_answer_section_and_leaves_a_card_without_one_untouched() -> None:
    page = to_html(scorecard(answer_quality(verified=False)))
    assert JUDGE not in page
    assert html.escape(JUDGE) in page
    plain = to_html(scorecard(None))
    assert "answer-fairness" not in plain and "Answer quality" not in plain
    assert plain.count("<script") == 2  # the embedded JSON and the main script, nothing more
