"""Answer quality through the distributed farm: tool sets and a judge on real workers, the
stored scorecard, and a rescore published to the judge's queue."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_farm.scenarios import find_scenario
from tests.distributed.conftest import (
    Farm,
    wait_until,
)

pytestmark = pytest.mark.integration

SCENARIO = "code.where.keep-alive"


def judge(shift: int) -> dict[str, Any]:
    scores = {
        "right_code": 3,
        "coverage": 3,
        "correctness": 4,
        "answers_question": 3,
        "citations": 4,
        "no_fabrication": 4,
    }
    lower = {k: v - shift for k, v in scores.items()}
    script = [{"run": 0, "scores": scores}, {"run": 1, "scores": lower}]
    return {"id": "judge", "adapter": "scripted", "model": "j", "hardware": "cpu", "script": script}


def answers_sweep() -> dict[str, Any]:
    answer = find_scenario("code", SCENARIO).example_answer
    agent = {"id": "agent", "adapter": "scripted", "model": "a", "hardware": "cpu"}
    return {
        "name": "answers-distributed",
        "models": [agent | {"script": [{"answer": answer}]}],
        "prompts": ["code"],
        "toolsets": ["baseline", "search", "symbols"],
        "scenarios": {"suites": ["code"], "ids": [SCENARIO]},
        "repetitions": 2,
        "paraphrases": "verbatim",
        "judge": {"model": judge(1), "runs": 2},
    }


def test_a_tool_set_sweep_with_a_judge_runs_on_workers_and_rescores_there(
    farm: Farm, tmp_path: Path
) -> None:
    farm.worker("cpu", "farm-cpu@answers", "--control")
    sweep_id = farm.submit(farm.sweep_file(tmp_path, answers_sweep()))
    wait_until(
        lambda: farm.rows("select 1 from scorecard where sweep_id = :s", s=sweep_id),
        180,
        "the aggregate task to store the scorecard",
    )
    scored = farm.rows(
        "select toolset, baseline, adoption from answer_score where sweep_id = :s", s=sweep_id
    )
    assert sorted(r.toolset for r in scored) == sorted(["baseline", "search", "symbols"] * 2)
    assert all(r.adoption == 0.0 for r in scored if r.baseline)
    judged = farm.rows("select count(*) from judgement where sweep_id = :s", s=sweep_id)
    assert judged[0][0] == 6 * 2 * 6

    report = json.loads(farm.cli("report", sweep_id, "-f", "json").stdout)
    answers = report["answers"]
    labels = {r["prompt"] for r in answers["rows"] if r["dimension"] == "config"}
    assert labels == {"code+baseline", "code+search", "code+symbols"}
    assert answers["judges"][0]["sigma_criterion"] == pytest.approx(0.25 / 2**0.5)

    judge_file = farm.sweep_file(
        tmp_path, answers_sweep() | {"name": "j2", "judge": {"model": judge(2), "runs": 2}}
    )
    out = farm.cli("rescore", sweep_id, "--judge-from", str(judge_file), "--distributed").stdout
    assert "rescoring 6 trial(s)" in out
    passes = farm.rows(
        "select scoring_id, count(*) from answer_score where sweep_id = :s group by 1",
        s=sweep_id,
    )
    assert sorted(n for _s, n in passes) == [6, 6]
    report = json.loads(farm.cli("report", sweep_id, "-f", "json").stdout)
    assert report["answers"]["kind"] == "rescore"
    assert report["answers"]["judges"][0]["sigma_criterion"] == pytest.approx(0.5 / 2**0.5)
