"""What a worker checks before it takes trials: every agent target routed to its tags runs a
command this node has (docs/agents.md)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from mcp_farm.schema import FarmError, ModelTarget
from mcp_farm.schema.placeholders import PLACEHOLDER
from mcp_farm.schema.tasks.broker import queue_for
from mcp_farm.workers.agent.process import ROOT, filled
from mcp_farm.workers.store.nodes import waiting_sweeps

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


def routed_agents(engine: Engine, tags: list[str]) -> list[tuple[str, ModelTarget]]:
    """(sweep name, target) for each agent target whose trials wait in a queue of `tags`, in
    the active sweeps; each target once. A stored sweep this version cannot read is skipped
    (its trials say why when they run)."""
    rows = waiting_sweeps(engine, [queue_for(t) for t in tags])
    found: dict[str, tuple[str, ModelTarget]] = {}
    for name, spec_json in rows:
        for target in _agent_targets(spec_json):
            if target.hardware in tags:
                found.setdefault(target.key(), (name, target))
    return list(found.values())


def _agent_targets(spec_json: str) -> Iterable[ModelTarget]:
    try:
        models = json.loads(spec_json).get("models") or []
    except (ValueError, AttributeError):
        return
    for model in models:
        if isinstance(model, dict) and model.get("adapter") == "agent":
            try:
                yield ModelTarget.model_validate(model)
            except ValidationError:
                continue


def missing_command(target: ModelTarget, environ: Mapping[str, str]) -> str | None:
    """Why the agent's command cannot start on this node, in words; None when it can, or
    when its first word holds a placeholder only a trial fills in (`{folder}`)."""
    assert target.agent is not None
    values = {"python": sys.executable, "root": str(ROOT)}  # what no trial is needed for
    program = filled(target.agent.command[0], values)
    if PLACEHOLDER.search(program):
        return None
    if os.sep not in program:
        path = target.agent.env.get("PATH", environ.get("PATH", os.defpath))
        return None if shutil.which(program, path=path) else f"is not on this node's PATH ({path})"
    where = Path(program)
    if not where.is_absolute():
        if target.agent.cwd is None:
            return "is a relative path, and the agent runs in the trial's own folder: give it whole"
        cwd = filled(target.agent.cwd, values)
        if PLACEHOLDER.search(cwd):
            return None
        where = Path(cwd) / where
    if not where.is_file():
        return f"does not exist ({where})"
    if not os.access(where, os.X_OK):
        return f"is not executable ({where})"
    return None


def check_agents(engine: Engine, tags: list[str], environ: Mapping[str, str]) -> None:
    """FarmError naming each agent target routed to `tags` whose command this node lacks, and
    what to do; nothing when all can start (a missing one would end every trial of it as an
    infra_error)."""
    problems = []
    for sweep, target in routed_agents(engine, tags):
        assert target.agent is not None
        why = missing_command(target, environ)
        if why is not None:
            problems.append(
                f"agent target {target.id!r} (sweep {sweep!r}, hardware {target.hardware!r}) "
                f"runs {target.agent.command[0]!r}, which {why}"
            )
    if problems:
        raise FarmError(
            "; ".join(problems) + ". Install the command on this node (or fix `agent.command` "
            "in the sweep file), or start this worker without the tag that routes it here"
        )
