"""`farm` as a user runs it: real subprocesses, real SQLite file, real fixture servers."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
import yaml

from mcp_farm.scenarios import load_suite
from tests.forkrun import farm_cli
from tests.helpers import ideal_script

SCENARIO = next(s for s in load_suite("basic").scenarios if s.id == "fs.budget-total")


def farm(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    return farm_cli([*args, "--data-dir", str(data)], timeout=600)


def sweep_file(tmp_path: Path, **overrides: object) -> Path:
    spec = {
        "name": "scripted-check",
        "models": [
            {
                "id": "ideal",
                "adapter": "scripted",
                "model": "script",
                "script": ideal_script(SCENARIO),
            }
        ],
        "prompts": ["native", "json"],
        "scenarios": {"ids": [SCENARIO.id]},
        "repetitions": 2,
    } | overrides
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_run_stores_one_row_per_trial_and_call_and_prints_a_scorecard(tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = farm("run", str(sweep_file(tmp_path)), data=data)
    assert done.returncode == 0, done.stderr
    assert "Scorecard" in done.stdout and "100%" in done.stdout
    db = sqlite3.connect(data / "farm.sqlite")
    rows = db.execute("select outcome, status, tier, provenance_json from trial").fetchall()
    assert len(rows) == 4
    assert {r[0] for r in rows} == {"pass"} and {r[1] for r in rows} == {"done"}
    assert json.loads(rows[0][3])["scenario_version"] == SCENARIO.version
    assert db.execute("select count(*) from tool_call").fetchone()[0] == 8


def test_running_the_same_sweep_again_duplicates_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = sweep_file(tmp_path)
    assert farm("run", str(path), data=data).returncode == 0
    again = farm("run", "--rerun", str(path), data=data)
    assert again.returncode == 0, again.stderr
    db = sqlite3.connect(data / "farm.sqlite")
    assert db.execute("select count(*) from trial").fetchone()[0] == 4
    assert db.execute("select count(*) from tool_call").fetchone()[0] == 8
    assert db.execute("select count(*) from sweep").fetchone()[0] == 1
    report = farm("report", data=data)
    assert report.returncode == 0 and "4/4 trials done" in report.stdout


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("name: s\nmodels: [\n", "line"),
        (
            "name: s\nprompts: [native]\nmodels:\n  - {id: m, adapter: local, model: gemma3-270m, "
            "colour: red}\n",
            "models[0].colour",
        ),
        (
            "name: s\nprompts: [native]\nmodels:\n  - {id: m, adapter: local, model: gpt-9}\n",
            "models[0]",
        ),
        (
            "name: s\nprompts: [native]\nmodels:\n  - {id: m, adapter: magic, model: x}\n",
            "models[0].adapter",
        ),
        (
            "name: s\nprompts: [nope]\nmodels:\n  - {id: m, adapter: local, model: gemma3-270m}\n",
            "prompts[0]",
        ),
        (
            "name: s\nprompts: [native]\nscenarios: {ids: [no.such]}\nmodels:\n"
            "  - {id: m, adapter: local, model: gemma3-270m}\n",
            "scenarios.ids[0]",
        ),
        (
            "name: s\nprompts: [native]\nmodels:\n"
            "  - {id: m, adapter: local, model: gemma3-270m}\n"
            "  - {id: m, adapter: local, model: smollm2-135m}\n",
            "models[1].id",
        ),
    ],
)
def test_bad_sweep_files_exit_2_with_one_clear_line(
    tmp_path: Path, content: str, field: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    done = farm("run", str(path), data=tmp_path / "data")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert str(path) in done.stderr.replace("\n", "") and field in done.stderr


def test_a_malformed_scenario_suite_names_its_file_and_field(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "suite: x\nscenarios:\n  - id: a\n    version: 1\n    tier: easy\n"
        "    prompt: hi\n    servers: [filesystem]\n"
    )
    done = farm(
        "run", str(sweep_file(tmp_path, scenarios={"suites": [str(suite)]})), data=tmp_path / "data"
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "scenarios[0].tier" in done.stderr


def test_report_of_an_unknown_sweep_is_a_clear_error(tmp_path: Path) -> None:
    done = farm("report", "nope", data=tmp_path / "data")
    assert done.returncode == 2 and "no sweep 'nope'" in done.stderr


def test_endpoint_option_serves_the_sweep_from_that_url(tmp_path: Path) -> None:
    # Nothing listens on this port: every trial must come out as infra_error, not a model failure
    # (the endpoint check would stop the run before it starts; it is turned off here).
    from tests.helpers import free_port

    data = tmp_path / "data"
    url = f"http://127.0.0.1:{free_port()}/v1"
    done = farm(
        "run",
        str(sweep_file(tmp_path, prompts=["json"], repetitions=1)),
        "--endpoint",
        url,
        "--endpoint-model",
        "qwen3-4b",
        "--no-preflight",
        data=data,
    )
    # A run that measured nothing says why and exits 1.
    assert done.returncode == 1, done.stderr
    assert "ended as infrastructure errors" in " ".join(done.stdout.split())
    rows = (
        sqlite3.connect(data / "farm.sqlite")
        .execute("select model_id, outcome, detail from trial")
        .fetchall()
    )
    assert [(r[0], r[1]) for r in rows] == [("openai-qwen3-4b", "infra_error")]
    assert url in rows[0][2]
