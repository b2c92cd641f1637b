"""What a worker checks before it takes trials: every agent target routed to its tags runs a
command this node has (docs/agents.md)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from pydantic import ValidationError

from mcp_farm.schema import FarmError, ModelTarget
from mcp_farm.schema.agent_check import command_problem, refusal
from mcp_farm.schema.tasks.broker import queue_for
from mcp_farm.workers.store.nodes import waiting_sweeps

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

RETAG = "start this worker without the tag that routes it here"
"""The worker's own way out of a command it lacks: not take the trials that need it."""


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


def check_agents(engine: Engine, tags: list[str], environ: Mapping[str, str]) -> None:
    """FarmError naming each agent target routed to `tags` whose command this node lacks, and
    what to do; nothing when all can start (a missing one would end every trial of it as an
    infra_error)."""
    problems = []
    for sweep, target in routed_agents(engine, tags):
        context = f"sweep {sweep!r}, hardware {target.hardware!r}"
        problem = command_problem(target, environ, "this node", context)
        if problem is not None:
            problems.append(problem)
    if problems:
        raise FarmError(refusal(problems, "this node", RETAG))
