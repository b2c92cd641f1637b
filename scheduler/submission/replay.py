"""Replaying a stored sweep's tool calls against the servers as they are defined now.

`farm replay SWEEP_ID` plans a new sweep from the stored one: the same prompt configs,
scenarios, tool sets and repetitions, each model replaced by a `replay` target whose turns are
the ones that model recorded for that very trial (workers/model/replay.py). No model runs; the
calls go, in their recorded order, to today's servers, and the same scenarios grade the result.
`changes` (replay_changes.py) then says, per trial and per call, what differs from the
recording. A sweep file may name `replay` targets itself (`model:` the recorded sweep's id);
`resolve_replays` fills their turns in for `farm run` and `farm sweep submit`, before anything
is recorded.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mcp_farm.scheduler.submission.expand import Plan
from mcp_farm.scheduler.submission.queries import recorded_trials, sweep_spec_json
from mcp_farm.schema import FarmError, ModelTarget, SweepSpec, TrialSpec

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

DETAIL_CHARS = 500
"""Characters of a recorded trial's detail (a traceback, at worst) carried in its replay."""

Key = tuple[str, str, str, str, int, int]
"""(model, prompt config, scenario, tool set, repetition, wording): a trial's place in a sweep."""


def replay_spec(source: SweepSpec, source_id: str) -> SweepSpec:
    """The sweep that replays `source_id`: its models become `replay` targets of the same ids
    (so `farm compare` lines the two up), and no judge runs (a replayed answer is the recorded
    one). The targets keep the default hardware tag, `cpu`: a replay runs no model, so it
    needs no GPU queue and takes no endpoint slot, and any `cpu` worker runs it."""
    models = [ModelTarget(id=m.id, adapter="replay", model=source_id) for m in source.models]
    return source.model_copy(
        update={"name": f"{source.name}-replay", "models": models, "judge": None, "gates": []}
    )


def key_of(row: Any) -> Key:
    return (
        row.model_id,
        row.prompt_id,
        row.scenario_id,
        row.toolset,
        int(row.repetition),
        int(row.variant),
    )


def spec_key(trial: TrialSpec) -> Key:
    return (
        trial.model.id,
        trial.prompt.id,
        trial.scenario.id,
        trial.toolset_id,
        trial.repetition,
        trial.variant,
    )


def replay_sources(sweep: SweepSpec) -> list[str]:
    """The recorded sweeps that the sweep's `replay` targets replay (their `model`), in order."""
    return list(dict.fromkeys(m.model for m in sweep.models if m.adapter == "replay"))


def replay_note(spec_json: str) -> str | None:
    """How a stored sweep relates to the sweeps it replays, in one line; None for a sweep that
    replays nothing. Read loosely: a sweep recorded under an older contract is still shown."""
    stored = json.loads(spec_json)
    models = [m for m in stored.get("models") or [] if isinstance(m, dict)]
    replaying = [m for m in models if m.get("adapter") == "replay"]
    sources = list(dict.fromkeys(str(m.get("model")) for m in replaying))
    if not sources:
        return None
    names = ", ".join(str(m.get("id")) for m in replaying)
    who = "" if len(replaying) == len(models) else f" (models {names})"
    return f"replay of {', '.join(sources)}{who}: measures the servers, not the model"


def turns(transcript_json: str, turns_json: str = "[]") -> list[dict[str, Any]]:
    """The model's turns of a recorded transcript, as the replay adapter gives them.

    They are the assistant messages after the user's request: the opening messages
    (workers/model/encode.py) put the prompt config's few-shot examples, user and assistant
    pairs, before the request, and those are the prompt's, not the model's; the session adds
    no user message after the request (results are `tool` messages). A conversation
    (`turns_json` has an entry per user turn sent) starts at its first turn's message, each
    later user message starts the next turn, and each reply carries its turn (`turn`, 0-based);
    the messages the farm wrote for a continued turn (`farm: true`) are not the model's."""
    messages = json.loads(transcript_json)
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    sent = len(json.loads(turns_json or "[]"))
    first = users[-max(sent, 1)] + 1 if users else 0
    found = []
    turn = 0
    for message in messages[first:]:
        if message.get("role") == "user":
            turn += 1
        if message.get("role") != "assistant" or message.get("farm"):
            continue
        calls = [
            {"id": c["id"], "name": c["name"], "arguments": c.get("arguments", {})}
            for c in message.get("tool_calls") or []
        ]
        reply = {
            "text": message.get("content", ""),
            "calls": calls,
            "undecoded": message.get("undecoded", False),
        }
        found.append(reply | {"turn": turn} if sent else reply)
    return found


def ending(row: Any) -> dict[str, Any]:
    """The script's last item: how the recorded trial ended. The replay adapter ends the
    session the same way when it is asked for a turn the recording does not have (a trial
    stopped by the model's time limit has no last turn to give)."""
    return {"end": row.stop_reason or "", "detail": (row.detail or "")[:DETAIL_CHARS]}


def with_recordings(plan: Plan, recorded: list[Any], source_id: str) -> Plan:
    """`plan` with the turns of each trial that replays `source_id` filled in from the recorded
    trial in its place; a trial with no recording is an error before anything runs."""
    mine = [t for t in plan.trials if t.model.adapter == "replay" and t.model.model == source_id]
    by_key = {key_of(row): row for row in recorded}
    missing = [t for t in mine if spec_key(t) not in by_key]
    if missing:
        shown = ", ".join(
            f"{t.model.id} · {t.prompt.id} · {t.scenario.id} #{t.repetition}" for t in missing[:5]
        )
        models = sorted({row.model_id for row in recorded})
        unknown = sorted({t.model.id for t in missing} - set(models))
        hint = (
            f"; it recorded models {', '.join(models) or 'none'}, and a replay target takes the "
            f"id of the model it replays (not {', '.join(unknown)})"
            if unknown
            else ""
        )
        raise FarmError(
            f"sweep {source_id} has no recorded trial for {len(missing)} of the "
            f"{len(mine)} trials to replay (e.g. {shown}): run it to the end first "
            f"(`farm sweep resume {source_id}` or `farm run` again){hint}"
        )
    replayed = {t.trial_id for t in mine}
    trials = []
    for trial in plan.trials:
        if trial.trial_id not in replayed:
            trials.append(trial)
            continue
        row = by_key[spec_key(trial)]
        script = [*turns(row.transcript_json, getattr(row, "turns_json", "[]")), ending(row)]
        model = trial.model.model_copy(update={"script": script})
        spec = trial.model_copy(update={"model": model})
        trials.append(TrialSpec.model_validate(spec.model_dump() | {"trial_id": ""}))
    return replace(plan, trials=trials)


def resolve_replays(plan: Plan, engine: Engine) -> Plan:
    """`plan` with the turns of every `replay` target filled in from the sweeps they name, read
    from `engine`; FarmError, before anything is recorded, when such a sweep is not there or
    lacks a trial. A plan without replay targets comes back as it was."""
    for source in replay_sources(plan.sweep):
        if sweep_spec_json(engine=engine, sweep_id=source) is None:
            models = ", ".join(
                m.id for m in plan.sweep.models if m.adapter == "replay" and m.model == source
            )
            raise FarmError(
                f"model {models}: adapter replay replays sweep {source!r}, which is not in this "
                "database (`model:` of a replay target is a recorded sweep's id; `farm report` "
                "lists them)"
            )
        plan = with_recordings(plan, recorded_trials(engine=engine, sweep_id=source), source)
    return plan
