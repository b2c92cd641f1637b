"""How sweeps are shown: finished ones as finished, watched ones as lines in a log, and what
`farm report` and `farm sweep submit` say to someone on a fresh clone."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from sqlalchemy import insert
from typer.testing import CliRunner

from mcp_farm.scheduler.cli import sweep as cli_sweep
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.operations import progress as progress_module
from mcp_farm.scheduler.operations.progress import (
    SweepProgress,
    sweep_progress,
)
from mcp_farm.scheduler.report.terminal.ops import progress_view
from mcp_farm.schema.db import (
    SweepRow,
    TrialRow,
    init_db,
    make_engine,
)
from tests.helpers import free_port

START = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)


def _sqlite(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'farm.sqlite'}"


def _record(url: str, sweep_id: str, statuses: list[str], *, cancelled: bool = False) -> None:
    """A sweep whose trials took 10 s each, one after another, from START."""
    engine = make_engine(url)
    init_db(engine)
    trials = [
        {
            "trial_id": f"{sweep_id}-{i}",
            "sweep_id": sweep_id,
            "model_id": "m",
            "prompt_id": "native",
            "scenario_id": f"s{i}",
            "scenario_version": 1,
            "tier": "simple",
            "expected_tools": "[]",
            "repetition": 0,
            "status": status,
            "queue": "farm.hw.cpu",
            "outcome": ("pass" if i % 2 else "wrong_tool") if status == "done" else None,
            "payload_json": "{}",
            "started_at": START + timedelta(seconds=10 * i) if status == "done" else None,
            "finished_at": START + timedelta(seconds=10 * i + 10) if status == "done" else None,
        }
        for i, status in enumerate(statuses)
    ]
    with engine.begin() as conn:
        conn.execute(
            insert(SweepRow).values(
                sweep_id=sweep_id,
                name=sweep_id,
                spec_json="{}",
                trial_count=len(statuses),
                created_at=START,
                status="cancelled" if cancelled else "active",
            )
        )
        conn.execute(insert(TrialRow), trials)
    engine.dispose()


def _text(renderable: object) -> str:
    console = Console(width=200, no_color=True)
    with console.capture() as captured:
        console.print(renderable)
    return captured.get()


def test_a_sweep_whose_trials_have_all_run_is_shown_finished_with_its_overall_rate(
    tmp_path: Path,
) -> None:
    url = _sqlite(tmp_path)
    _record(url, "done-sweep", ["done"] * 4)
    progress = sweep_progress(engine=make_engine(url), sweep_id="done-sweep")
    assert progress.state == "finished"
    shown = _text(progress_view(progress))
    assert "finished  4/4 finished" in shown
    # Four trials over the 40 s from the first start to the last finish.
    assert "0.10 trials/s overall" in shown and "took 0m40s" in shown
    assert "active" not in shown and "0.00 trials/s" not in shown
    # `farm sweep status` with no id shows the latest sweep the same way.
    listed = CliRunner().invoke(app, ["sweep", "status", "--db", url])
    assert listed.exit_code == 0, listed.output
    assert "done-sweep  finished" in listed.output and "active" not in listed.output


def test_a_cancelled_sweep_with_nothing_left_is_shown_cancelled_not_finished(
    tmp_path: Path,
) -> None:
    url = _sqlite(tmp_path)
    _record(url, "stopped", ["done", "cancelled", "cancelled"], cancelled=True)
    progress = sweep_progress(engine=make_engine(url), sweep_id="stopped")
    assert progress.state == "cancelled"
    assert "cancelled  3/3 finished" in _text(progress_view(progress))


def test_a_sweep_with_trials_left_is_active_with_an_eta(tmp_path: Path) -> None:
    url = _sqlite(tmp_path)
    _record(url, "going", ["done", "running", "pending"])
    shown = _text(progress_view(sweep_progress(engine=make_engine(url), sweep_id="going")))
    assert "active  1/3 finished" in shown and "eta" in shown and "overall" not in shown


def _snapshot(done: int, total: int = 4) -> SweepProgress:
    progress = SweepProgress("watched", "watched", "active", total)
    progress.by_state = Counter({"done": done, "pending": total - done})
    progress.outcomes = Counter({"pass": done})
    return progress


def test_watching_a_sweep_without_a_terminal_prints_a_line_as_trials_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _sqlite(tmp_path)
    _record(url, "watched", ["pending"] * 4)
    # What the database says at each look: nothing done, then half, then all.
    looks = iter([_snapshot(0), _snapshot(2), _snapshot(4)])
    # The command imports its helpers when it runs: patch where it finds them.
    monkeypatch.setattr(progress_module, "sweep_progress", lambda **_kw: next(looks))
    watched = CliRunner().invoke(
        app, ["sweep", "status", "watched", "--watch", "--every", "0", "--db", url]
    )
    assert watched.exit_code == 0, watched.output
    lines = [line for line in watched.output.splitlines() if line.startswith("watched · ")]
    # A live view written to a log shows only its last frame; here each look is a line.
    assert [line.split(" · ")[2] for line in lines] == [
        "0/4 finished",
        "2/4 finished",
        "4/4 finished",
    ]
    assert lines[-1].split(" · ")[1] == "finished"
    assert "report: farm report watched" in watched.output


def test_report_on_an_empty_database_suggests_farm_run_first(tmp_path: Path) -> None:
    empty = CliRunner().invoke(app, ["report", "--db", _sqlite(tmp_path)])
    message = " ".join(str(empty.exception).split())
    assert "farm run scenarios/sweeps/quickstart.yaml" in message
    assert message.index("farm run") < message.index("farm sweep submit")


def test_submitting_to_a_sqlite_database_warns_that_other_machines_will_not_see_it(
    tmp_path: Path,
) -> None:
    sweep = {
        "name": "local-submit",
        "models": [{"id": "m", "adapter": "scripted", "model": "s", "script": []}],
        "prompts": ["native"],
        "scenarios": {"ids": ["fs.budget-total"]},
        "repetitions": 1,
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    # No broker answers on this port, so nothing is published; the warning comes first.
    broker = f"redis://127.0.0.1:{free_port()}/0"
    done = CliRunner().invoke(
        app, ["sweep", "submit", str(path), "--db", _sqlite(tmp_path), "--broker", broker]
    )
    warning = " ".join(done.stderr.split())
    assert "workers on other machines will not see it" in warning
    assert "FARM_DATABASE_URL" in warning and "farm run" in warning
    assert "warning" not in done.stdout


def test_a_postgres_database_gets_no_local_database_warning() -> None:
    notes = Console(record=True, width=200)
    cli_sweep.warn_if_local("postgresql+psycopg://farm@head:5432/farm", notes)
    assert notes.export_text() == ""
    cli_sweep.warn_if_local("sqlite:////tmp/farm.sqlite", notes)
    assert "will not see it" in notes.export_text()
