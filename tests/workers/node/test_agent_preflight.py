"""A worker's preflight: it refuses to start while an agent target routed to its tags runs a
command this node lacks, naming the target, the command and what to do; it lets through
commands it finds on PATH or as a path, and targets routed elsewhere or finished."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from mcp_farm.schema import FarmError, ModelTarget
from mcp_farm.schema.agent_check import missing_command
from mcp_farm.schema.db import SweepRow, TrialRow, init_db, make_engine, session_scope
from mcp_farm.workers.node.preflight import check_agents

PATH = {"PATH": "/usr/bin:/bin"}


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    return engine


def _agent(command: list[str], hardware: str = "cpu", **agent: Any) -> dict[str, Any]:
    return {
        "id": "my-agent",
        "adapter": "agent",
        "model": "my-agent/v3",
        "hardware": hardware,
        "agent": {"command": command, **agent},
    }


def _sweep(
    engine: Engine, model: dict[str, Any], status: str = "pending", sweep: str = "active"
) -> None:
    with session_scope(engine) as session:
        session.add(
            SweepRow(
                sweep_id="sw1",
                name="agents",
                spec_json=json.dumps({"name": "agents", "models": [model]}),
                trial_count=1,
                created_at=datetime.now(UTC),
                status=sweep,
            )
        )
        session.add(
            TrialRow(
                trial_id="t1",
                sweep_id="sw1",
                model_id=model["id"],
                prompt_id="native",
                scenario_id="basic.x",
                scenario_version=1,
                tier="simple",
                expected_tools="[]",
                repetition=0,
                status=status,
                queue=f"farm.hw.{model['hardware']}",
                payload_json="{}",
            )
        )


def test_a_worker_refuses_to_start_when_a_routed_agents_command_is_missing(
    engine: Engine,
) -> None:
    _sweep(engine, _agent(["no-such-agent-cmd", "{mcp_config}"]))
    with pytest.raises(FarmError) as raised:
        check_agents(engine, ["cpu"], PATH)
    said = str(raised.value)
    assert "'my-agent'" in said and "'no-such-agent-cmd'" in said and "'agents'" in said
    assert "PATH" in said and "Install the command on this node" in said


def test_a_worker_starts_when_the_routed_agents_command_is_on_its_path(engine: Engine) -> None:
    _sweep(engine, _agent(["sh", "-c", "true"]))
    check_agents(engine, ["cpu"], PATH)


def test_agent_targets_routed_to_other_tags_or_finished_are_not_checked(
    engine: Engine, tmp_path: Path
) -> None:
    _sweep(engine, _agent(["no-such-agent-cmd"], hardware="igpu"))
    check_agents(engine, ["cpu"], PATH)
    done = make_engine(f"sqlite:///{tmp_path / 'done.sqlite'}")
    init_db(done)
    _sweep(done, _agent(["no-such-agent-cmd"]), status="done")
    check_agents(done, ["cpu"], PATH)


def test_a_cancelled_sweeps_agent_is_not_checked(engine: Engine) -> None:
    _sweep(engine, _agent(["no-such-agent-cmd"]), sweep="cancelled")
    check_agents(engine, ["cpu"], PATH)


def _target(command: list[str], **agent: Any) -> ModelTarget:
    return ModelTarget.model_validate(_agent(command, **agent))


def test_the_python_placeholder_is_filled_in_before_the_check() -> None:
    assert missing_command(_target(["{python}", "-m", "x"]), PATH) is None


def test_a_path_that_does_not_exist_or_cannot_run_is_named(tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n")
    assert "does not exist" in (missing_command(_target([str(tmp_path / "nope")]), PATH) or "")
    assert "not executable" in (missing_command(_target([str(script)]), PATH) or "")
    script.chmod(0o755)
    assert missing_command(_target([str(script)]), PATH) is None


def test_a_relative_path_is_looked_up_in_the_agents_working_folder(tmp_path: Path) -> None:
    (tmp_path / "agent").write_text("#!/bin/sh\n")
    (tmp_path / "agent").chmod(0o755)
    assert missing_command(_target(["./agent"], cwd=str(tmp_path)), PATH) is None
    assert "trial's own folder" in (missing_command(_target(["./agent"]), PATH) or "")


def test_a_command_only_a_trial_can_fill_in_is_left_to_the_trial() -> None:
    assert missing_command(_target(["{folder}/agent"]), PATH) is None


def test_the_agents_own_path_is_where_its_command_is_looked_up() -> None:
    here = str(Path(sys.executable).parent)
    name = Path(sys.executable).name
    assert missing_command(_target([name]), {"PATH": "/nowhere"}) is not None
    assert missing_command(_target([name], env={"PATH": here}), {"PATH": "/nowhere"}) is None
