"""Agent repetitions crossed with user seeds, embedded: each repetition meets the same m users
(their seeds stored on the trials), and the scorecard's agent × user variance split agrees with
statsmodels' two-way ANOVA of the stored outcomes, in every medium; `farm users plan` reads it
and plans a comparison of two configurations by the t-test statsmodels computes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from rich.console import Console
from sqlalchemy import text
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.power import TTestIndPower
from typer.testing import CliRunner

from bench.usersim_variance import sweep_of
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.report.formats import to_markdown
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.statistics.user_power import table_df, table_variance
from mcp_farm.scheduler.statistics.user_variance import Components
from mcp_farm.scheduler.submission.embedded import run_embedded
from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.schema import ModelTarget, PromptConfig, Settings
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.workers.model.scripted import ScriptedClient

pytestmark = pytest.mark.integration


def test_a_scripted_any_item_is_picked_by_the_seed_the_same_each_time() -> None:
    script = [{"any": [{"answer": str(i)} for i in range(10)]}]
    target = ModelTarget(id="s", adapter="scripted", model="x", script=script)
    prompt = PromptConfig(id="p", version=1, mode="native", system_prompt="")

    def pick(seed: int) -> str:
        return anyio_run(ScriptedClient(target), prompt, seed)

    assert pick(3) == pick(3)
    assert len({pick(seed) for seed in range(20)}) > 1


def anyio_run(client: ScriptedClient, prompt: PromptConfig, seed: int) -> str:
    import anyio

    async def once() -> str:
        return (await client.complete([], [], prompt, seed)).text

    return anyio.run(once)


def components_by_anova(frame: pd.DataFrame) -> tuple[float, float, float]:
    """σ²_agent, σ²_user, σ²_rest of one k × m table from statsmodels' mean squares."""
    table = anova_lm(ols("y ~ C(agent) + C(user)", data=frame).fit())
    ms_a, ms_b, ms_e = (table.loc[r, "mean_sq"] for r in ("C(agent)", "C(user)", "Residual"))
    k, m = frame["agent"].nunique(), frame["user"].nunique()
    return max((ms_a - ms_e) / m, 0.0), max((ms_b - ms_e) / k, 0.0), ms_e


def test_the_scorecard_splits_a_crossed_sweeps_variance_as_statsmodels_does(
    settings: Settings,
) -> None:
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    plan = expand(sweep_of(repetitions=7, seeds=4), "test")
    run_embedded(plan=plan, settings=settings, engine=engine, console=Console(quiet=True))
    with engine.begin() as conn:
        rows = conn.execute(
            text(
                "select model_id, repetition, outcome, user_sim_json from trial "
                "where sweep_id = :s order by model_id, repetition"
            ),
            {"s": plan.sweep_id},
        ).all()
    frame = pd.DataFrame(
        [
            (r.model_id, r.repetition, json.loads(r.user_sim_json)["identity"]["seed"], r.outcome)
            for r in rows
        ],
        columns=["model", "agent", "user", "outcome"],
    )
    # Every agent repetition met the same four users: seeds 100..103, crossed.
    assert sorted(frame.groupby(["model", "agent"])["user"].apply(tuple).unique()) == [
        (100, 101, 102, 103)
    ]
    frame["y"] = (frame["outcome"] == "pass").astype(float)
    card = build_scorecard(engine=engine, sweep_id=plan.sweep_id)
    split = {u.model: u.variance for u in card.simulated_users}
    assert set(split) == {"steady", "sloppy"}
    for model, v in split.items():
        assert v is not None
        cells = frame[frame["model"] == model]
        assert (v.scenarios, v.repetitions, v.seeds) == (1, 7, 4)
        expected = components_by_anova(cells)
        assert (v.agent, v.user, v.rest) == pytest.approx(expected, abs=1e-9)
        total = sum(expected)
        assert v.user_icc == (pytest.approx(expected[1] / total) if total else None)
        se = np.sqrt((expected[0] / 7 + expected[1] / 4 + expected[2] / 28) / 1)
        assert v.resolution == pytest.approx(1.959964 * se, rel=1e-6)
    # The split differs between the agents somewhere, so the check compared real numbers.
    assert len({(v.agent, v.user, v.rest) for v in split.values() if v}) == 2

    terminal = Console(record=True, width=240)
    print_scorecard(card, terminal)
    for shown in (terminal.export_text(), to_markdown(card), to_html(card)):
        assert "σ² interaction + residual" in shown and "7 × 4" in shown

    db = settings.resolved_database_url()
    result = CliRunner().invoke(
        app,
        ["users", "plan", plan.sweep_id, "--difference", "0.3", "--db", db],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "steady × native" in result.output and "sloppy × native" in result.output
    said = " ".join(result.output.split())
    assert "As measured, 7 agent repetitions × 4 user seeds over 1 scenario(s)" in said
    steady = split["steady"]
    assert steady is not None
    assert f"pass rate ± {steady.resolution:.3f} (95% half-width" in said


def test_one_user_seed_gives_no_split() -> None:
    plan = expand(sweep_of(repetitions=3, seeds=1), "test")
    assert all(t.user_seed is None for t in plan.trials)


def test_the_planner_takes_given_deviations_and_each_row_is_the_fewest_statsmodels_allows() -> None:
    args = ["users", "plan", "--sd-agent", "0.2", "--sd-user", "0.1", "--sd-rest", "0.3"]
    result = CliRunner().invoke(
        app,
        [*args, "--scenarios", "10", "--difference", "0.1", "--seeds", "3", "--alpha", "0.05"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    rows = [
        [c.strip() for c in line.split("│") if c.strip()]
        for line in result.output.splitlines()
        if line.startswith("│")
    ]
    assert [row[0] for row in rows] == ["1 (a new user each)", "2", "3"]
    parts = Components(0.04, 0.01, 0.09, (), 10, 0, 0)

    def power(k: int, m: int) -> float:
        # statsmodels' two-sample t power: two means of 10 scenario rates, each rate's
        # variance and its degrees of freedom as the plan builds them.
        effect = 0.1 / np.sqrt(table_variance(parts, k, m))
        df = table_df(parts, k, m, 10)
        return float(TTestIndPower().power(effect, nobs1=10, alpha=0.05, df=df))

    for m, row in enumerate(rows, start=1):
        k = int(row[1])
        assert int(row[2]) == k * m
        assert power(k, m) >= 0.8 > power(k - 1, m)
    assert "with 80% power (two-sided t-test, α = 0.05), 10 scenarios" in result.output
    bad = CliRunner().invoke(app, ["users", "plan", "--sd-agent", "0.2"])
    assert bad.exit_code != 0
