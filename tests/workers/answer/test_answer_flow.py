"""The answer-quality layer end to end, embedded: tool sets, a scripted agent on the real code
servers, a scripted judge with known noise, the stored scorecard, and rescoring."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rich.console import Console
from sqlalchemy import text
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from mcp_farm.scenarios import find_scenario
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.report.formats import to_markdown
from mcp_farm.scheduler.scorecard.aggregate import scorecard_of
from mcp_farm.scheduler.scorecard.queries.answers import record_anchor_check
from mcp_farm.scheduler.submission.embedded import run_embedded
from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.scheduler.submission.queries import record_scoring
from mcp_farm.schema import (
    JudgeSettings,
    ModelTarget,
    ScenarioSelection,
    Settings,
    SweepSpec,
    TrialSpec,
    digest,
    load_task,
)
from mcp_farm.schema.db import (
    init_db,
    make_engine,
)
from tests.helpers import (
    free_port,
    scripted,
)

SCENARIO = "code.where.keep-alive"
LOCK = "0123456789abcdef" * 4
"""A lock hash for gate runs recorded by hand."""
CRITERIA = {
    "right_code": 3,
    "coverage": 3,
    "correctness": 4,
    "answers_question": 3,
    "citations": 4,
    "no_fabrication": 4,
}


def scripted_judge(shift: int) -> ModelTarget:
    """Run 1 scores every criterion `shift` points below run 0: a judge with known noise."""
    lower = {k: v - shift for k, v in CRITERIA.items()}
    return ModelTarget(
        id="scripted-judge",
        adapter="scripted",
        model="judge",
        script=[{"run": 0, "scores": CRITERIA}, {"run": 1, "scores": lower}],
    )


def code_sweep(agent: list[dict[str, Any]], shift: int = 1) -> SweepSpec:
    return SweepSpec(
        name="answers",
        models=[scripted(agent, "agent")],
        prompts=["code"],
        toolsets=["baseline", "symbols"],
        scenarios=ScenarioSelection(suites=["code"], ids=[SCENARIO]),
        repetitions=2,
        paraphrases="verbatim",
        judge=JudgeSettings(model=scripted_judge(shift), runs=2),
    )


def agent_script() -> list[dict[str, Any]]:
    answer = find_scenario("code", SCENARIO).example_answer
    call = {"name": "find_definition", "arguments": {"symbol": "_keep_alive"}}
    return [{"call": call}, {"answer": answer}]


@pytest.fixture
def ran(settings: Settings) -> tuple[Engine, str]:
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    plan = expand(code_sweep(agent_script()), "test")
    run_embedded(plan=plan, settings=settings, engine=engine, console=Console(quiet=True))
    return engine, plan.sweep_id


def test_trials_without_tool_sets_or_judge_keep_their_ids() -> None:
    spec = expand(code_sweep(agent_script()), "test").trials[0]
    plain = spec.model_copy(update={"toolset": None, "judge": None})
    old_style = plain.model_dump(mode="json", exclude={"trial_id", "toolset", "judge"})
    rebuilt = TrialSpec.model_validate(plain.model_dump(mode="json") | {"trial_id": ""})
    assert rebuilt.trial_id == digest(old_style)


def test_each_tool_set_runs_every_scenario_and_the_baseline_attaches_no_server(
    ran: tuple[Engine, str],
) -> None:
    engine, sweep_id = ran
    with engine.connect() as conn:
        rows = conn.execute(
            text("select toolset, outcome, detail from trial where sweep_id = :s order by toolset"),
            {"s": sweep_id},
        ).all()
    assert [r.toolset for r in rows] == ["baseline", "baseline", "symbols", "symbols"]
    # The baseline offers no tools: the same call there names a tool no server has.
    assert {r.outcome for r in rows if r.toolset == "baseline"} == {"wrong_tool"}
    assert {r.outcome for r in rows if r.toolset == "symbols"} == {"pass"}


def test_fairness_and_adoption_are_scored_apart_and_the_baseline_adopts_nothing(
    ran: tuple[Engine, str],
) -> None:
    engine, sweep_id = ran
    answers = scorecard_of(engine=engine, sweep_id=sweep_id).answers
    assert answers is not None
    rows = {r.prompt: r for r in answers.of("config")}
    base, symbols = rows["code+baseline"], rows["code+symbols"]
    assert base.baseline and base.adoption == 0.0 and base.tool_fluency is None
    assert symbols.adoption == pytest.approx(1.0) and symbols.discoverability == 1.0
    # The same prose earns the same fairness whatever the tools: keywords, grounding, judge.
    for row in (base, symbols):
        assert row.keyword_coverage == pytest.approx(1.0)
        assert row.grounding_rate == pytest.approx(1.0)
        assert row.hallucinated == 0 and row.grounded > 0
    assert base.judge_quality == pytest.approx(symbols.judge_quality)
    ranked = {r.prompt: r for r in answers.ranking}
    assert ranked["code+symbols"].vs_baseline == pytest.approx(
        symbols.fairness - base.fairness  # type: ignore[operator]
    )


def test_a_scripted_judge_with_known_noise_gives_the_expected_sigma(
    ran: tuple[Engine, str],
) -> None:
    engine, sweep_id = ran
    answers = scorecard_of(engine=engine, sweep_id=sweep_id).answers
    assert answers is not None
    (judge,) = answers.judges
    # Two runs one point apart on a 0..4 scale: every item's SD is (1/4)/sqrt(2), at every level.
    expected = 0.25 / 2**0.5
    assert judge.runs == 2 and judge.trials == 4
    assert judge.sigma_criterion == pytest.approx(expected)
    assert judge.sigma_step == pytest.approx(expected)
    assert judge.sigma_scenario == pytest.approx(expected)
    assert judge.anchors == "unverified" and not answers.verified
    with engine.connect() as conn:
        count = conn.execute(text("select count(*) from judgement")).scalar_one()
    assert count == 4 * 2 * len(CRITERIA)


def test_the_anchor_verdict_shown_is_the_latest_gate_run_not_the_stored_one(
    ran: tuple[Engine, str], settings: Settings
) -> None:
    engine, sweep_id = ran
    db = settings.resolved_database_url()
    stored = scorecard_of(engine=engine, sweep_id=sweep_id)  # built and stored: unverified
    assert stored.answers is not None and stored.answers.judges[0].anchors == "unverified"
    judge = stored.answers.judges[0]
    shown: list[tuple[str, float | None, bool]] = []
    for passed, rho in ((True, 0.91), (False, 0.42), (True, 0.88)):
        record_anchor_check(
            engine,
            judge_key=scripted_judge(1).key(),
            judge_model=judge.judge,
            rubric_id=judge.rubric_id,
            rubric_hash=judge.rubric_hash,
            rho=rho,
            passed=passed,
            detail="",
            folder="scenarios/anchors/code",
            lock_sha256=LOCK,
            threshold=0.85,
        )
        card = scorecard_of(engine=engine, sweep_id=sweep_id)  # the stored card, not rebuilt
        assert card.answers is not None
        now = card.answers.judges[0]
        assert now.anchor_checked_at is not None
        shown.append((now.anchors, now.anchor_rho, card.answers.verified))
        # Every format reads the same verdict, with what it verified and when.
        cell = (
            f"{now.anchors} ρ={rho:.2f} ≥ 0.85 (anchors scenarios/anchors/code, lock "
            f"{LOCK[:12]}, {now.anchor_checked_at:%Y-%m-%d %H:%M} UTC)"
        )
        md = to_markdown(card)
        assert cell in md
        assert ("Unverified ranking" in md) == (not passed)
        assert json.loads(card.model_dump_json())["answers"]["judges"][0]["anchors"] == now.anchors
        # `farm report` as people read it: the terminal tables and the HTML page.
        said = CliRunner().invoke(app, ["report", sweep_id, "--db", db], env={"COLUMNS": "400"})
        assert said.exit_code == 0, said.output
        assert cell in said.output
        assert ("ranking unverified" in said.output) == (not passed)
        page = CliRunner().invoke(app, ["report", sweep_id, "--format", "html", "--db", db])
        assert page.exit_code == 0, page.output
        assert f">{cell}<" in page.output
        assert ('id="unverified"' in page.output) == (not passed)
    assert shown == [("verified", 0.91, True), ("failed", 0.42, False), ("verified", 0.88, True)]
    # A failure on the folder, then a pass on another folder at a lowered threshold: the
    # failure still decides. Then the folder passes at a lowered threshold: verified, and
    # every report says it was lowered.
    for passed, folder, threshold in (
        (False, "scenarios/anchors/code", 0.85),
        (True, "/tmp/easy-anchors", 0.5),
    ):
        record_anchor_check(
            engine,
            judge_key=scripted_judge(1).key(),
            judge_model=judge.judge,
            rubric_id=judge.rubric_id,
            rubric_hash=judge.rubric_hash,
            rho=0.6,
            passed=passed,
            detail="",
            folder=folder,
            lock_sha256=LOCK,
            threshold=threshold,
        )
    card = scorecard_of(engine=engine, sweep_id=sweep_id)
    assert card.answers is not None and not card.answers.verified
    now = card.answers.judges[0]
    assert (now.anchors, now.anchor_folder) == ("failed", "scenarios/anchors/code")
    record_anchor_check(
        engine,
        judge_key=scripted_judge(1).key(),
        judge_model=judge.judge,
        rubric_id=judge.rubric_id,
        rubric_hash=judge.rubric_hash,
        rho=0.6,
        passed=True,
        detail="",
        folder="scenarios/anchors/code",
        lock_sha256=LOCK,
        threshold=0.5,
    )
    card = scorecard_of(engine=engine, sweep_id=sweep_id)
    assert card.answers is not None and card.answers.verified
    now = card.answers.judges[0]
    assert now.anchor_lowered and now.anchor_threshold == 0.5
    lowered = "verified ρ=0.60 ≥ 0.5, LOWERED below 0.85 (anchors scenarios/anchors/code"
    assert lowered in to_markdown(card)
    said = CliRunner().invoke(app, ["report", sweep_id, "--db", db], env={"COLUMNS": "400"})
    assert lowered in said.output
    page = CliRunner().invoke(app, ["report", sweep_id, "--format", "html", "--db", db])
    assert lowered in page.output
    junit = CliRunner().invoke(app, ["report", sweep_id, "--format", "junit", "--db", db])
    assert 'anchors_lowered" value="true"' in junit.output
    assert 'anchors_folder" value="scenarios/anchors/code"' in junit.output


def test_rescoring_keeps_the_deterministic_scores_and_adds_judge_rows(
    ran: tuple[Engine, str], settings: Settings
) -> None:
    engine, sweep_id = ran
    judge = JudgeSettings(model=scripted_judge(shift=2), runs=2)
    with engine.begin() as conn:
        scoring = record_scoring(conn, sweep_id, judge, "rescore", "test")
        trials = conn.execute(
            text("select trial_id from trial where sweep_id = :s"), {"s": sweep_id}
        ).scalars()
        trial_ids = list(trials)
    task = load_task("farm.rescore_trial")
    for trial_id in trial_ids:
        summary = task(
            {"trial_id": trial_id, "scoring_id": scoring, "judge": judge.model_dump(mode="json")},
            settings,
        )
        assert summary.outcome == summary.recorded_outcome
    query = text(
        "select trial_id, outcome, keyword_coverage, grounding_rate, grounded, adoption"
        " from answer_score where scoring_id = :c order by trial_id"
    )
    with engine.connect() as conn:
        (first,) = conn.execute(
            text("select distinct scoring_id from answer_score where scoring_id <> :c"),
            {"c": scoring},
        ).scalars()
        before = conn.execute(query, {"c": first}).all()
        after = conn.execute(query, {"c": scoring}).all()
        judged = conn.execute(
            text("select scoring_id, count(*) from judgement group by scoring_id")
        ).all()
    assert before == after
    assert {r[0]: r[1] for r in judged} == {first: 48, scoring: 48}
    card = scorecard_of(engine=engine, sweep_id=sweep_id, rebuild=True)
    assert card.answers is not None and card.answers.scoring_id == scoring
    assert card.answers.judges[0].sigma_criterion == pytest.approx(0.5 / 2**0.5)
    # The earlier pass is still there, and a report can show it.
    args = ["report", sweep_id, "--scoring", first, "-f", "json"]
    shown = CliRunner().invoke(app, [*args, "--db", settings.resolved_database_url()])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["answers"]["scoring_id"] == first


def test_a_judge_that_cannot_be_reached_leaves_the_trial_recorded_and_says_why(
    settings: Settings,
) -> None:
    unreachable = ModelTarget(
        id="down-judge",
        adapter="openai",
        model="judge",
        endpoint=f"http://127.0.0.1:{free_port()}/v1",
        request_timeout_s=5,
    )
    sweep = code_sweep([{"answer": "It is `_keep_alive` (h11/_connection.py:84)."}])
    sweep = sweep.model_copy(
        update={
            "toolsets": ["baseline"],
            "repetitions": 1,
            "judge": JudgeSettings(model=unreachable, runs=2),
        }
    )
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    plan = expand(sweep, "test")
    run_embedded(plan=plan, settings=settings, engine=engine, console=Console(quiet=True))
    with engine.connect() as conn:
        trial = conn.execute(text("select status, outcome from trial")).one()
        judged = conn.execute(text("select score, rationale from judgement")).all()
        score = conn.execute(text("select judge_quality, grounded from answer_score")).one()
    assert (trial.status, trial.outcome) == ("done", "pass")
    assert len(judged) == 2 * len(CRITERIA)
    assert all(j.score is None and "unreachable" in j.rationale for j in judged)
    assert score.judge_quality is None and score.grounded == 1


def test_compare_answers_pairs_scenario_means_and_calls_small_criterion_gaps_noise(
    ran: tuple[Engine, str], settings: Settings
) -> None:
    _engine, sweep_id = ran
    args = ["compare", f"{sweep_id}@agent/code+baseline", f"{sweep_id}@agent/code+symbols"]
    result = CliRunner().invoke(
        app, [*args, "--answers", "--db", settings.resolved_database_url()], env={"COLUMNS": "160"}
    )
    assert result.exit_code == 0, result.output
    assert "Answer quality:" in result.output and "fairness" in result.output
    # The same prose got the same judge scores in both arms: every criterion gap is noise.
    for criterion in CRITERIA:
        line = next(x for x in result.output.splitlines() if criterion in x)
        assert "noise" in line and "finding" not in line


def plan_rows(output: str) -> dict[str, list[str]]:
    """`farm answers plan`'s rows for the scripted judge, by what they reach, from σ on."""
    rows = [line for line in output.splitlines() if "scripted-judge" in line]
    cells = [[c.strip() for c in row.split("│") if c.strip()] for row in rows]
    return {row[4]: row[2:] for row in cells}


def test_plan_says_how_many_judge_runs_a_difference_needs(
    ran: tuple[Engine, str], settings: Settings
) -> None:
    _engine, sweep_id = ran
    db = settings.resolved_database_url()
    args = ["answers", "plan", sweep_id, "--difference", "0.05", "--db", db]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    # σ_scenario = 0.25/√2 over 2 runs (the scripted judge's known noise), one scenario. The
    # test estimates σ from the runs: 98 runs reach the threshold (t on 194 df) and 198 reach
    # 80% power (statsmodels: 197.2), where the normal distribution said 97 and 197. Today, on
    # 2 degrees of freedom: Δ = t₀.₉₇₅(2)·0.25/√2 = 0.761, and 0.999 at 80% power.
    assert plan_rows(result.output) == {
        "95% threshold": ["0.177", "2", "95% threshold", "0.761", "98", "98", "50"],
        "80% power": ["0.177", "2", "80% power", "0.999", "198", "198", "100"],
    }
    # The figures say which mean they are about.
    wide = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    for head in ("Δ now, configuration mean (1 scenario)", "runs, one scenario's mean alone"):
        assert head in wide.output
    bad = CliRunner().invoke(app, [*args[:3], "--power", "0.3", "--db", db])
    assert bad.exit_code != 0


def test_plan_over_several_scenarios_says_the_runs_per_transcript_and_the_scenarios(
    settings: Settings,
) -> None:
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    ids = ["code.where.keep-alive", "code.where.sentinels", "code.why.missing-host"]
    sweep = code_sweep(agent_script()).model_copy(
        update={
            "scenarios": ScenarioSelection(suites=["code"], ids=ids),
            "toolsets": ["symbols"],
            "repetitions": 1,
        }
    )
    plan = expand(sweep, "test")
    run_embedded(plan=plan, settings=settings, engine=engine, console=Console(quiet=True))
    args = ["answers", "plan", plan.sweep_id, "--difference", "0.05", "--power", "0.9"]
    db = settings.resolved_database_url()
    result = CliRunner().invoke(app, [*args, "--db", db], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    assert "3 scenarios" in result.output
    # Three scenarios of 2 runs: a configuration's mean averages 6 readings today, σ on
    # 2·3·(2 − 1) = 6 degrees of freedom. In all, 98 runs reach the threshold and 264 reach 90%
    # power for one scenario's mean alone; over these 3 scenarios 33 and 88 runs per
    # transcript, or 50 and 133 scenarios at today's 2 runs.
    assert plan_rows(result.output) == {
        "95% threshold": ["0.177", "2", "95% threshold", "0.250", "98", "33", "50"],
        "90% power": ["0.177", "2", "90% power", "0.399", "264", "88", "133"],
    }


INVENTED_FORMS = [
    "h11/_connection.py:9084-9090",
    "**h11/_connection.py**:9084-9090",
    'File "h11/_connection.py", line 9084',
    "lines 9084 to 9090 of h11/_connection.py",
    "h11/_connection.py around line 9,084",
    "h11/_connection.py?plain=1#L9084-L9090",
    "h11/_connection.py@f40c9c3:9084",
    "h11/_connection.py, lines 84, 9090",
    "h11/_connection.py – line 9084",
    "h11/_connection.py [line 9084]",
    "h11/_connection.py (#9084)",
    "h11/_connection.py, lines 84; 9090",
]


def test_agents_citing_the_same_invented_lines_score_alike_however_they_write_them(
    settings: Settings,
) -> None:
    # Each agent gives the ideal answer with its first citation moved past the end of the file,
    # written its own way (plus one agent with a table): none of them may earn grounding for it.
    answer = find_scenario("code", SCENARIO).example_answer
    assert answer is not None and "h11/_connection.py:84-90" in answer
    answers = [answer.replace("h11/_connection.py:84-90", form) for form in INVENTED_FORMS]
    answers.append(
        answer.replace("in h11/_connection.py:84-90.", "below.")
        + "\n| file | line |\n|---|---|\n| `h11/_connection.py` | 9084 |\n"
    )
    models = [scripted([{"answer": a}], f"agent-{i}") for i, a in enumerate(answers)]
    sweep = code_sweep([]).model_copy(
        update={"models": models, "toolsets": ["baseline"], "repetitions": 1}
    )
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    plan = expand(sweep, "test")
    run_embedded(plan=plan, settings=settings, engine=engine, console=Console(quiet=True))
    card = scorecard_of(engine=engine, sweep_id=plan.sweep_id)
    assert card.answers is not None
    rows = card.answers.of("config")
    assert len(rows) == len(answers)
    assert {(r.grounded, r.hallucinated) for r in rows} == {(1, 1)}
    assert {r.grounding_rate for r in rows} == {0.5}
    # Fairness differs only by efficiency (each trial's own seconds and tokens).
    fairness = [r.fairness or 0.0 for r in rows]
    assert max(fairness) - min(fairness) < 0.001
