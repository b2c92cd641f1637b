"""Frozen users, embedded: `farm users freeze` turns a sweep's recorded simulated users into
a suite that replays their messages whatever the agent says, runnable with no user model; a
frozen-versus-live `farm compare` of the same agent matches them cell by cell (the user's
effect)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from rich.console import Console
from sqlalchemy.engine import Engine
from sqlmodel import col, select
from typer.testing import CliRunner

from mcp_farm.scenarios import find_scenario, load_suite
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.scorecard.compare import Side, compare, user_note
from mcp_farm.scheduler.submission.embedded import run_embedded
from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.schema import (
    ModelTarget,
    ScenarioSelection,
    Settings,
    SpecError,
    SweepSpec,
    UserModel,
    UserSimRecord,
)
from mcp_farm.schema.db import TrialRow, init_db, make_engine, session_scope
from tests.helpers import scripted
from tests.workers.usersim.test_simulated_user import AT_FOUR, IDEAL

pytestmark = pytest.mark.integration

DENTIST = "usersim.dentist-ask-time"


def sweep_of(name: str, agent: ModelTarget, suite: str, user: UserModel | None) -> SweepSpec:
    return SweepSpec(
        name=name,
        models=[agent],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=[suite], ids=[DENTIST]),
        repetitions=1,
        user_model=user,
    )


@dataclass
class Stored:
    outcome: str | None
    failure_source: str | None
    said: list[str]
    """The user's messages as the agent received them."""
    user: UserSimRecord


def run(sweep: SweepSpec, settings: Settings, engine: Engine) -> tuple[str, Stored]:
    plan = expand(sweep, "test")
    run_embedded(plan=plan, settings=settings, engine=engine, console=Console(quiet=True))
    with session_scope(engine) as session:
        [row] = session.exec(select(TrialRow).where(col(TrialRow.sweep_id) == plan.sweep_id))
        said = [m["content"] for m in json.loads(row.transcript_json) if m["role"] == "user"]
        user = UserSimRecord.model_validate_json(row.user_sim_json)
        return plan.sweep_id, Stored(row.outcome, row.failure_source, said, user)


@pytest.fixture
def engine(settings: Settings) -> Engine:
    made = make_engine(settings.resolved_database_url())
    init_db(made)
    return made


def test_a_frozen_user_replays_the_recorded_messages_against_another_agent(
    settings: Settings, engine: Engine, tmp_path: Path
) -> None:
    agent, user = IDEAL[DENTIST]
    live_user = UserModel(model=scripted(user, "user-script"))
    live_id, live = run(
        sweep_of("live", scripted(agent, "a"), "usersim", live_user), settings, engine
    )
    assert live.outcome == "pass"

    out = tmp_path / "frozen.yaml"
    url = settings.resolved_database_url()
    cli = CliRunner().invoke(app, ["users", "freeze", live_id, "--out", str(out), "--db", url])
    assert cli.exit_code == 0, cli.output
    assert "1 frozen scenario(s)" in cli.output
    [frozen] = load_suite(str(out)).scenarios
    original = find_scenario("usersim", DENTIST)
    assert frozen.user_sim is not None and original.user_sim is not None
    # The parting message (with the stop marker) never reached the agent: not frozen.
    assert frozen.user_sim.frozen == ["It starts at 15:00 and takes 45 minutes."]
    assert frozen.user_sim.model_copy(update={"frozen": None}) == original.user_sim
    assert (frozen.id, frozen.version, frozen.expect) == (
        original.id,
        original.version,
        original.expect,
    )

    # The same agent meets the frozen user with no user model: the same pass.
    same_id, same = run(sweep_of("frozen", scripted(agent, "a"), str(out), None), settings, engine)
    assert (same.outcome, same.user.identity.model_id) == ("pass", "frozen")
    # The recording ran out after the agent's last reply: the recorded user's stop, no error.
    assert (same.user.ended, same.user.errors, same.failure_source) == ("user_stop", [], "none")
    [cell] = [c for c in compare(engine, Side(live_id), Side(same_id), ["config"])]
    assert (cell.diff.a_n, cell.diff.b_n, cell.diff.diff) == (1, 1, 0.0)
    # The comparison says that its sides met different users; a side against itself does not.
    note = user_note(engine, Side(live_id), Side(same_id))
    assert note is not None and note.startswith("simulated users differ: A met ")
    assert "frozen" in note.split("B met ")[1]
    assert user_note(engine, Side(live_id), Side(live_id)) is None

    # Another agent books 16:00: the frozen user said 15:00 all the same, so it is the agent's.
    _other_id, other = run(
        sweep_of("other", scripted(AT_FOUR, "b"), str(out), None), settings, engine
    )
    assert other.outcome == "wrong_params"
    assert other.failure_source == "agent"
    assert other.said == [original.user_sim.opening, "It starts at 15:00 and takes 45 minutes."]


def test_freezing_a_sweep_without_recorded_users_names_what_is_missing(
    settings: Settings, engine: Engine, tmp_path: Path
) -> None:
    url = settings.resolved_database_url()
    out = tmp_path / "none.yaml"
    cli = CliRunner().invoke(
        app, ["users", "freeze", "no-such-sweep", "--out", str(out), "--db", url]
    )
    # The CLI's entry point prints a FarmError as one line; the app itself raises it.
    assert isinstance(cli.exception, SpecError)
    assert "no recorded conversation with a simulated user" in str(cli.exception)
    assert not out.exists()
