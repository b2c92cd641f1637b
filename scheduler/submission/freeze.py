"""Frozen users: the conversations a sweep recorded with a simulated user, turned into a suite
whose cards replay the recorded user messages in order (`user_sim.frozen`), so the same user
can meet another agent, and a frozen-versus-live comparison measures the user's effect
(docs/simulated-user.md, "Frozen users")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp_farm.scenarios import find_scenario, load_suite
from mcp_farm.scheduler.submission.queries import user_conversations
from mcp_farm.schema import Message, SpecError, TrialSpec, UserSimRecord

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


@dataclass(frozen=True)
class Recorded:
    """One recorded conversation with a simulated user, as frozen."""

    suite: str
    scenario_id: str
    trial_id: str
    repetition: int
    messages: list[str]
    """The user's messages after the opening, as the agent received them."""


def user_messages(spec: TrialSpec, transcript: list[Message], record: UserSimRecord) -> list[str]:
    """The messages the user sent after its opening: the transcript's user messages after the
    prompt's few-shot turns and the opening, without a parting message (one the user wrote
    with its stop marker, which the agent never received)."""
    users = [m.content for m in transcript if m.role == "user"]
    after_opening = users[len(spec.prompt.few_shot) + 1 :]
    return after_opening[: record.messages - 1]


def recorded(
    engine: Engine, sweep_id: str, scenario_ids: list[str], repetition: int | None
) -> list[Recorded]:
    """Per scenario with a live simulated user, the conversation of the lowest repetition (or
    of `repetition`) that the sweep recorded, the first configuration's; in suite order."""
    found: dict[str, Recorded] = {}
    for row in user_conversations(engine, sweep_id, repetition):
        spec = TrialSpec.model_validate_json(row.payload_json)
        if row.scenario_id in found or spec.user is None:
            continue  # the no-user arm and frozen users recorded no live user
        if scenario_ids and row.scenario_id not in scenario_ids:
            continue
        transcript = [Message.model_validate(m) for m in json.loads(row.transcript_json)]
        record = UserSimRecord.model_validate_json(row.user_sim_json)
        messages = user_messages(spec, transcript, record)
        found[row.scenario_id] = Recorded(
            spec.scenario.suite, row.scenario_id, row.trial_id, row.repetition, messages
        )
    missing = [s for s in scenario_ids if s not in found]
    if missing or not found:
        what = f"scenario {missing[0]!r}" if missing else "any scenario"
        raise SpecError(
            "sweep", sweep_id, f"no recorded conversation with a simulated user for {what}"
        )
    return sorted(found.values(), key=lambda r: (r.suite, r.scenario_id))


def frozen_suite(name: str, sweep_id: str, conversations: list[Recorded]) -> dict[str, Any]:
    """A suite (as YAML data) with one scenario per recorded conversation: the scenario as
    the suite has it today, its id and version kept (so `farm compare` matches it with the
    live one cell by cell), its card's `frozen` set to the recorded user messages."""
    scenarios: list[dict[str, Any]] = []
    servers: dict[str, dict[str, Any]] = {}
    for conv in conversations:
        scenario = find_scenario(conv.suite, conv.scenario_id)
        data = scenario.model_dump(mode="json", exclude_unset=True, by_alias=True)
        data["user_sim"]["frozen"] = conv.messages
        data["description"] = (
            f"Frozen user: the recorded conversation of trial {conv.trial_id[:12]} "
            f"(sweep {sweep_id}, repetition {conv.repetition}). {scenario.description}".strip()
        )
        scenarios.append(data)
        for server in load_suite(conv.suite).servers:
            servers[server.name] = server.model_dump(mode="json", exclude_unset=True)
    suite: dict[str, Any] = {
        "suite": name,
        "description": f"Frozen simulated users recorded by sweep {sweep_id}.",
    }
    if servers:
        suite["servers"] = list(servers.values())
    return suite | {"scenarios": scenarios}
