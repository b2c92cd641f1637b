"""`farm compare` finds a planted regression and stays quiet on noise; gates and report formats."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import yaml
from sqlalchemy.engine import Engine

from bench.synthetic import SyntheticScenario, load, scenarios, trials
from mcp_farm.scheduler.report.formats import (
    to_junit,
    to_markdown,
)
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.compare import (
    Side,
    compare,
)
from mcp_farm.scheduler.scorecard.gates import check_gates
from mcp_farm.scheduler.statistics.rates import trials_to_resolve
from mcp_farm.schema import Gate
from mcp_farm.schema.db import (
    init_db,
    make_engine,
)
from tests.forkrun import farm_cli

CONFIGS = [("m", "native"), ("m", "json")]
BROKEN_TOOL = "tool_05"
# Thirty scenarios; every third one also expects the tool the "broken" sweep gets wrong.
PICKED = [
    SyntheticScenario(s.id, s.tier, (*s.tools, BROKEN_TOOL) if i % 3 == 0 else s.tools)
    if BROKEN_TOOL not in s.tools
    else SyntheticScenario(s.id, s.tier, (*(t for t in s.tools if t != BROKEN_TOOL), "tool_00"))
    for i, s in enumerate(scenarios(30, seed=2))
]
BROKEN = {s.id for s in PICKED if BROKEN_TOOL in s.tools}
NEAR_BROKEN = {t for s in PICKED if BROKEN_TOOL in s.tools for t in s.tools}


def _base(model: str, prompt: str, scenario: SyntheticScenario) -> float:
    return 0.35 + 0.5 * (int(scenario.id[1:]) % 7) / 6  # 0.35 … 0.85, scenario by scenario


def _broken(model: str, prompt: str, scenario: SyntheticScenario) -> float:
    return 0.0 if BROKEN_TOOL in scenario.tools else _base(model, prompt, scenario)


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    load(engine, "base", trials("base", CONFIGS, PICKED, 10, _base, seed=100))
    load(engine, "noise", trials("noise", CONFIGS, PICKED, 10, _base, seed=200))
    load(engine, "broken", trials("broken", CONFIGS, PICKED, 10, _broken, seed=300))
    return engine


DIMENSIONS = ["config", "tool", "tier", "phrasing", "scenario"]


def test_two_sweeps_drawn_from_the_same_rates_show_no_significant_difference(
    engine: Engine,
) -> None:
    found = compare(engine, Side.parse("base"), Side.parse("noise"), DIMENSIONS)
    assert len(found) > 50
    assert [c for c in found if c.significant] == []


def test_a_planted_regression_is_flagged_and_listed_first(engine: Engine) -> None:
    assert len(BROKEN) == 10
    found = compare(engine, Side.parse("base"), Side.parse("broken"), DIMENSIONS)
    flagged = [c for c in found if c.verdict == "regression"]
    assert flagged, "the planted regression was not found"
    assert found[: len(flagged)] == flagged
    labels = {(c.dimension, c.label) for c in flagged}
    assert ("tool", f"m/native {BROKEN_TOOL}") in labels
    assert ("tool", f"m/json {BROKEN_TOOL}") in labels
    assert not any(c.verdict == "improvement" for c in found)
    # Only cells that involve the broken tool's scenarios regress.
    for c in flagged:
        if c.dimension == "scenario":
            assert c.label.split()[-1] in BROKEN
        if c.dimension == "tool":
            assert c.label.split()[-1] in NEAR_BROKEN


def test_two_configurations_inside_one_sweep_compare_on_their_cells(engine: Engine) -> None:
    found = compare(engine, Side.parse("broken@m/native"), Side.parse("broken@m/json"), ["tool"])
    assert {c.label for c in found} >= {BROKEN_TOOL}
    assert not any(c.significant for c in found)


def test_gates_pass_fail_and_name_what_failed(engine: Engine) -> None:
    card = build_scorecard(engine=engine, sweep_id="broken")
    checked, breaches = check_gates(card, [Gate(metric="pass_rate", per="tool", min=0.1)])
    assert checked == len(card.of("tool"))
    failed = {(b.row.prompt, b.row.key) for b in breaches if b.row}
    assert {("native", BROKEN_TOOL), ("json", BROKEN_TOOL)} <= failed
    assert {key for _, key in failed} <= NEAR_BROKEN
    assert any(f"{BROKEN_TOOL} is 0" in b.explain() for b in breaches)
    _, none = check_gates(card, [Gate(metric="p95_s", per="config", max=1000)])
    assert none == []
    _, unmatched = check_gates(card, [Gate(metric="pass_rate", per="tool", only="nope", min=0)])
    assert unmatched[0].row is None


def test_junit_has_one_case_per_scenario_and_config_and_markdown_lists_every_tier(
    engine: Engine,
) -> None:
    card = build_scorecard(engine=engine, sweep_id="broken")
    root = ET.fromstring(to_junit(card))
    cases = root.findall(".//testcase")
    assert len(cases) == len(PICKED) * len(CONFIGS)
    failed = {c.get("name") for c in cases if c.find("failure") is not None}
    assert failed >= BROKEN
    markdown = to_markdown(card)
    for tier in ("simple", "moderate", "complex"):
        assert f"| m | native | {tier} |" in markdown
    assert {c.get("name") for c in cases} == {s.id for s in PICKED}


def _farm(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    return farm_cli([*args, "--data-dir", str(data)], timeout=300)


def test_report_gate_and_compare_exit_codes_from_the_command_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    engine = make_engine(f"sqlite:///{data / 'farm.sqlite'}")
    init_db(engine)
    load(engine, "base", trials("base", CONFIGS, PICKED, 10, _base, seed=100))
    load(engine, "broken", trials("broken", CONFIGS, PICKED, 10, _broken, seed=300))
    gates = tmp_path / "gates.yaml"
    spec = {
        "name": "g",
        "models": [{"id": "m", "adapter": "scripted", "model": "s", "script": []}],
        "prompts": ["native"],
        "gates": [{"metric": "pass_rate", "per": "tool", "min": 0.1}],
    }
    gates.write_text(yaml.safe_dump(spec))
    failed = _farm("report", "broken", "--gate", "--gates", str(gates), "-f", "md", data=data)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "# Scorecard broken" in failed.stdout
    assert BROKEN_TOOL in failed.stderr and "gates failed" in failed.stderr
    passed = _farm("report", "base", "--gate", "--gates", str(gates), data=data)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "gates passed" in passed.stdout
    out = tmp_path / "card.json"
    assert _farm("report", "base", "-f", "json", "-o", str(out), data=data).returncode == 0
    assert json.loads(out.read_text())["sweep_id"] == "base"
    # To stdout, the report is all there is on stdout (gate verdicts go to stderr).
    piped = _farm("report", "base", "-f", "json", "--gate", "--gates", str(gates), data=data)
    assert json.loads(piped.stdout)["sweep_id"] == "base" and "gates passed" in piped.stderr
    text = tmp_path / "card.txt"
    assert _farm("report", "base", "-o", str(text), data=data).returncode == 0
    assert "Pass rate per model × prompt config" in text.read_text()
    regress = _farm("compare", "base", "broken", "--fail-on-regression", data=data)
    assert regress.returncode == 1, regress.stdout + regress.stderr
    assert "regression" in regress.stdout
    unknown = _farm("compare", "base", "nosuch", data=data)
    assert unknown.returncode == 2 and "no such sweep" in unknown.stderr


def _two_trials(engine: Engine, sweep_id: str, rate: float) -> None:
    one = [SyntheticScenario("s00", "simple", ("tool_00",))]
    load(engine, sweep_id, trials(sweep_id, [("m", "native")], one, 2, lambda *_: rate, seed=1))


def test_a_cell_of_two_trials_a_side_is_not_significant_and_says_what_would_resolve_it(
    tmp_path: Path,
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    _two_trials(engine, "all-pass", 1.0)
    _two_trials(engine, "all-fail", 0.0)
    found = compare(engine, Side.parse("all-pass"), Side.parse("all-fail"), ["config"])
    [cell] = found
    assert (cell.diff.a_rate, cell.diff.b_rate, cell.diff.a_n) == (1.0, 0.0, 2)
    assert cell.verdict == "not significant"
    assert cell.verdict_text.startswith("not significant (n=2): about ")
    repetitions = int(cell.verdict_text.split("about ")[1].split()[0])
    # At 100% vs 0%, the score test gives p = 0.025 with three trials a side, 0.083 with two.
    assert repetitions == 3


def test_many_trials_with_equal_rates_are_the_same(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    many = scenarios(30, seed=2)
    for sweep_id in ("x", "y"):
        load(
            engine, sweep_id, trials(sweep_id, [("m", "native")], many, 40, lambda *_: 1.0, seed=1)
        )
    [cell] = compare(engine, Side.parse("x"), Side.parse("y"), ["config"])
    assert cell.verdict == "same"
    assert cell.verdict_text == "same"


def test_every_interval_agrees_with_its_holm_verdict_and_the_repetitions_allow_for_holm(
    engine: Engine,
) -> None:
    # Issue 36, item 18: a 95% interval beside a Holm-adjusted verdict excluded 0 in cells
    # called "not significant", and the repetitions it suggested ignored the adjustment.
    found = [
        c
        for a, b in (("base", "broken"), ("base", "noise"))
        for c in compare(engine, Side.parse(a), Side.parse(b), DIMENSIONS)
    ]
    unadjusted_but_not_significant = [c for c in found if c.diff.p < 0.05 and not c.significant]
    assert unadjusted_but_not_significant, "the fixture must hold cells Holm turns around"
    for c in found:
        excludes_zero = c.diff.low > 0 or c.diff.high < 0
        # Every cell, pooled ones too: the verdict reads the interval (issue 43, item 12).
        assert excludes_zero == c.significant, (c.dimension, c.label, c.diff)
    for c in unadjusted_but_not_significant:
        assert c.alpha < 0.05


def test_the_repetitions_a_cell_needs_allow_for_the_holm_adjustment(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    ten = [SyntheticScenario(f"s{i:02d}", "simple", ("tool_00",)) for i in range(10)]
    for sweep_id, rate in (("all-pass", 1.0), ("all-fail", 0.0)):
        load(
            engine,
            sweep_id,
            trials(sweep_id, [("m", "native")], ten, 2, lambda *_, r=rate: r, seed=1),
        )
    found = compare(engine, Side.parse("all-pass"), Side.parse("all-fail"), ["scenario"])
    assert len(found) == 10
    for cell in found:
        # Alone, 3 trials a side at 100% vs 0% resolve it (the score test's p = 0.025); each
        # of ten equal cells under Holm is tested at 0.05 · p / p_adjusted = 0.05 / 10, which
        # 5 a side reach (p = 0.0027; 4 give 0.0082).
        assert trials_to_resolve(cell.diff) == 3
        assert cell.alpha == pytest.approx(0.05 / 10)
        assert cell.verdict_text.startswith("not significant (n=2): about 5 repetitions")
