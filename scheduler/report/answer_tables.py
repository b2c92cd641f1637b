"""The answer-quality section of a scorecard, format-neutral: the tables the Markdown and HTML
reports show and the properties JUnit suites carry. Fairness and adoption are always separate
columns and properties; nothing here adds the two layers into one number."""

from __future__ import annotations

from typing import NamedTuple

from mcp_farm.scheduler.report.cells import (
    NOT_MEASURED,
    num,
    pct,
    secs,
)
from mcp_farm.schema.scorecard import (
    ANCHOR_THRESHOLD,
    AnswerQuality,
    AnswerRow,
    JudgeVariance,
)


def fairness_cell(row: AnswerRow) -> str:
    if row.fairness_low is None or row.fairness_high is None:
        return pct(row.fairness)
    return f"{pct(row.fairness)} ({pct(row.fairness_low)}–{pct(row.fairness_high)})"


def adoption_cell(row: AnswerRow) -> str:
    return "0 (structural)" if row.baseline else pct(row.adoption)


def unverified_note(answers: AnswerQuality) -> str | None:
    """Why the ranking cannot be trusted yet, when the anchor gate has not passed."""
    if answers.verified:
        return None
    if not answers.judges:
        return "no judge scored this sweep: fairness has no judge-quality part"
    names = ", ".join(f"{j.judge} with rubric {j.rubric_id}" for j in answers.judges)
    return f"ranking unverified: the anchor gate has not passed for {names} (farm anchors verify)"


class AnswerTable(NamedTuple):
    """One answer-quality table as cells: report_formats writes it as Markdown,
    report_html_answers as HTML."""

    title: str
    heads: list[str]
    rows: list[list[str]]
    caption: str


LAYER_HEADS = ["model", "config", "n", "fairness (95% CI)", "Δ baseline", "keywords", "judge"]
LAYER_HEADS += ["grounding", "effic.", "adoption", "fluency", "discover"]
PHASE_HEADS = ["model", "config", "grounded", "unresolved", "halluc.", "reasoning", "tool I/O"]
PHASE_HEADS += ["verification", "model s", "judge s"]
JUDGE_HEADS = ["judge", "rubric", "trials×runs", "unreadable", "σ criterion", "σ step"]
JUDGE_HEADS += [
    "σ scenario",
    "ICC(1)",
    "scenario means: resolves Δ≥",
    "scenario means: Δ at 80% power",
]
JUDGE_HEADS += ["noise floor", "anchors"]


def answer_tables(answers: AnswerQuality) -> list[AnswerTable]:
    """Fairness vs adoption, grounding and tokens, and (with a judge) the judge's variance."""
    configs = answers.of("config")
    deltas = {(r.model, r.prompt): r.vs_baseline for r in answers.ranking}
    tables = [
        AnswerTable(
            "Fairness vs adoption per tool set (scenario-level means)",
            LAYER_HEADS,
            [_layer_cells(r, deltas.get((r.model, r.prompt))) for r in configs],
            "Fairness (keywords, judge, grounding, efficiency) and adoption (fluency, "
            "discoverability) are separate layers; adoption is 0 by construction for the baseline.",
        ),
        AnswerTable(
            "Citation grounding at the pinned commit, tokens by phase, time per trial",
            PHASE_HEADS,
            [_phase_cells(r) for r in configs],
            "~ marks an estimate (characters / 4); judging is not part of model time.",
        ),
    ]
    if answers.judges:
        tables.append(
            AnswerTable(
                "Judge variance across duplicate runs (scores 0..1)",
                JUDGE_HEADS,
                [_judge_cells(j) for j in answers.judges],
                "Rankings use scenario-level means; criterion differences below the noise "
                "floor are noise. Resolution: between two scenario means (t-test on the runs); "
                "`farm answers plan` gives it for configuration means.",
            )
        )
    return tables


def _layer_cells(r: AnswerRow, delta: float | None) -> list[str]:
    config = r.prompt + (" (baseline)" if r.baseline else "")
    fairness = [fairness_cell(r), "–" if delta is None else f"{100 * delta:+.1f}pt"]
    parts = [pct(r.keyword_coverage), pct(r.judge_quality), pct(r.grounding_rate)]
    adoption = [adoption_cell(r), pct(r.tool_fluency), pct(r.discoverability)]
    return [r.model, config, str(r.n), *fairness, *parts, pct(r.efficiency), *adoption]


def _phase_cells(r: AnswerRow) -> list[str]:
    buckets = [str(r.grounded), str(r.unresolved), str(r.hallucinated)]
    tokens = [_tokens(r, phase) for phase in ("reasoning", "tool_io", "verification")]
    return [r.model, r.prompt, *buckets, *tokens, secs(r.model_s), secs(r.judge_s)]


def _judge_cells(j: JudgeVariance) -> list[str]:
    sigmas = [num(j.sigma_criterion), num(j.sigma_step), num(j.sigma_scenario)]
    spread = [num(j.icc1, 2), num(j.resolution), num(j.resolution_80), num(j.noise_floor, 2)]
    return [
        j.judge,
        j.rubric_id,
        f"{j.trials}×{j.runs}",
        str(j.unreadable),
        *sigmas,
        *spread,
        _anchors(j),
    ]


def _anchors(judge: JudgeVariance) -> str:
    """The deciding gate run's verdict, with its ρ, the threshold it required (marked when
    lowered below the seed's), the anchor folder and lock it verified, and when it ran."""
    rho = judge.anchor_rho
    shown = judge.anchors if rho is None else f"{judge.anchors} ρ={rho:.2f}"
    if judge.anchor_threshold is not None:
        shown += f" ≥ {judge.anchor_threshold:g}" if rho is not None else ""
        shown += f", threshold {judge.anchor_threshold:g}" if rho is None else ""
        if judge.anchor_lowered:
            shown += f", LOWERED below {ANCHOR_THRESHOLD:g}"
    what = []
    if judge.anchor_folder:
        what.append(f"anchors {judge.anchor_folder}")
    if judge.anchor_lock:
        what.append(f"lock {judge.anchor_lock[:12]}")
    when = judge.anchor_checked_at
    if when is not None:
        what.append(f"{when:%Y-%m-%d %H:%M} UTC")
    return f"{shown} ({', '.join(what)})" if what else shown


def _tokens(row: AnswerRow, phase: str) -> str:
    value = getattr(row, f"tokens_{phase}")
    if value is None:  # an agent's reasoning, where its model calls did not pass the farm
        return NOT_MEASURED
    count = f"{value:,}"
    return f"~{count}" if phase in row.estimated else count


def answer_properties(answers: AnswerQuality, row: AnswerRow) -> list[tuple[str, str]]:
    """One configuration's answer quality as JUnit properties: fairness and adoption stay two
    properties; the judge's σ per level is keyed by rubric. Unmeasured values are left out."""
    found: list[tuple[str, float | str | None]] = [
        ("answer.scoring", answers.scoring_id),
        ("answer.verified", str(answers.verified).lower()),
        ("answer.baseline", str(row.baseline).lower()),
        ("answer.fairness", row.fairness),
        ("answer.fairness_low", row.fairness_low),
        ("answer.fairness_high", row.fairness_high),
        ("answer.adoption", 0.0 if row.baseline else row.adoption),
        ("answer.grounding_rate", row.grounding_rate),
        ("answer.judge_quality", row.judge_quality),
    ]
    if answers.judge:
        found.append(("answer.judge_model", answers.judge))
    for j in answers.judges:
        prefix = f"answer.judge.{j.rubric_id}"
        found += [
            (f"{prefix}.sigma_criterion", j.sigma_criterion),
            (f"{prefix}.sigma_step", j.sigma_step),
            (f"{prefix}.sigma_scenario", j.sigma_scenario),
            (f"{prefix}.icc1", j.icc1),
            (f"{prefix}.resolution", j.resolution),
            (f"{prefix}.resolution_80", j.resolution_80),
            (f"{prefix}.noise_floor", j.noise_floor),
            (f"{prefix}.anchors", j.anchors),
        ]
        if j.anchor_checked_at is not None:
            found.append((f"{prefix}.anchors_checked_at", j.anchor_checked_at.isoformat()))
        found += [
            (f"{prefix}.anchors_folder", j.anchor_folder),
            (f"{prefix}.anchors_lock", j.anchor_lock),
            (f"{prefix}.anchors_threshold", j.anchor_threshold),
        ]
        if j.anchor_threshold is not None:
            found.append((f"{prefix}.anchors_lowered", str(j.anchor_lowered).lower()))
    return [
        (name, value if isinstance(value, str) else f"{value:.4f}")
        for name, value in found
        if value is not None
    ]
