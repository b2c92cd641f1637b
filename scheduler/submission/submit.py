"""Recording a sweep and its pending trials, idempotently, and publishing them to the broker."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_farm.scheduler.submission.expand import Plan
from mcp_farm.scheduler.submission.publish import publish_trials
from mcp_farm.scheduler.submission.queries import record_plan
from mcp_farm.scheduler.submission.routing import (
    RoutingError,
    queue_of,
)
from mcp_farm.schema import Settings

if TYPE_CHECKING:
    from celery import Celery
    from sqlalchemy.engine import Engine


def plan_summary(plan: Plan) -> str:
    sweep = plan.sweep
    wording = " (× each wording)" if sweep.paraphrases == "all" else ""
    toolsets = f"{len(sweep.toolsets)} tool set(s) × " if sweep.toolsets else ""
    if sweep.tool_list is not None:
        toolsets += f"{len(sweep.tool_list.levels())} tool-list level(s) × "
    seeds = sweep.user_model.seeds if sweep.user_model else 1
    users = f" (× {seeds} user seeds, simulated users)" if seeds > 1 else ""
    return (
        f"{len(sweep.models)} model(s) × {len(sweep.prompts)} prompt config(s) × {toolsets}"
        f"{plan.scenario_count} scenario(s) × {sweep.repetitions} repetition(s){wording}{users} = "
        f"{len(plan.trials)} trials"
    )


@dataclass(frozen=True)
class Submission:
    sweep_id: str
    new: bool
    """False when the sweep had been submitted before: nothing was published again."""
    per_queue: Counter[str]
    published: int


def route(plan: Plan, settings: Settings) -> dict[str, str]:
    """Each model's queue; refuses a plan the broker could not deliver safely."""
    queues = {m.id: queue_of(m, settings) for m in plan.sweep.models}
    if plan.longest_trial_s >= settings.visibility_timeout_s:
        raise RoutingError(
            f"a scenario may run {plan.longest_trial_s:g} s but the broker redelivers "
            f"unacknowledged trials after {settings.visibility_timeout_s} s: raise "
            "FARM_VISIBILITY_TIMEOUT_S above the longest time limit (on workers too)"
        )
    return queues


def per_queue(plan: Plan, queues: dict[str, str]) -> Counter[str]:
    return Counter(queues[t.model.id] for t in plan.trials)


def submit(*, plan: Plan, settings: Settings, engine: Engine, app: Celery) -> Submission:
    """Record the sweep and publish one task per trial to its model's queue (once)."""
    queues = route(plan, settings)
    new = record_plan(engine=engine, plan=plan, queues=queues)
    published = 0
    if new:
        published = publish_trials(app, ((t, queues[t.model.id]) for t in plan.trials))
    return Submission(plan.sweep_id, new, per_queue(plan, queues), published)
