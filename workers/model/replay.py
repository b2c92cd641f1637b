"""The `replay` adapter: a stored sweep's model turns, given again in their recorded order.

No model runs. The farm fills the target's `script` in when it plans the replay, with the
turns the trial of the same scenario, prompt config, tool set, repetition and wording recorded
(scheduler/submission/replay.py): each turn's text, its calls as decoded then, and whether the
decoder could not read it; its last item says how the recorded trial ended. The calls go to
the servers as they are defined now, so a replay measures the servers, not the model.

Asked for a turn the recording does not have, the replay ends the session as the recording
ended: a trial stopped by the model's time limit, the scenario's clock, an infrastructure
failure or a bug in the farm recorded no last turn, and an empty answer in its place would show
as an outcome change that no server caused.
"""

from __future__ import annotations

from typing import Any

from mcp_farm.schema import (
    Message,
    ModelTarget,
    PromptConfig,
    StopReason,
    TokenCounts,
)
from mcp_farm.workers.errors import AdapterError
from mcp_farm.workers.model.toolspec import (
    JsonReply,
    ModelReply,
    ParsedCall,
    Sampling,
    ToolSpec,
)

UNDECODED = "the recorded reply could not be decoded either"

ENDS_WITHOUT_A_TURN: tuple[StopReason, ...] = (
    "model_time_limit",
    "time_limit",
    "infra_error",
    "harness_error",
)
"""How a recorded trial can end with no model turn of its own: the replay ends the same way.
Past a recording that ended otherwise (an answer, a loop, the turn limit) a replay goes only
when the scenario's limits were raised since; it ends there by the turn limit."""


def model_turns(messages: list[Message]) -> int:
    """How many replies the model has given in `messages`: the assistant messages after the
    request (the few-shot examples before it are the prompt config's)."""
    request = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    return sum(1 for m in messages[request + 1 :] if m.role == "assistant")


class ReplayClient:
    def __init__(self, target: ModelTarget) -> None:
        if target.script is None:
            raise AdapterError(
                f"model {target.id!r}: a replay target needs the recorded turns; replay a sweep "
                "with `farm replay SWEEP_ID`"
            )
        self.turns: list[dict[str, Any]] = [t for t in target.script if "end" not in t]
        self.end = next((t for t in target.script if "end" in t), {})
        self.pins = {"adapter": "replay", "source_sweep": target.model}

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec], prompt: PromptConfig, seed: int
    ) -> ModelReply:
        turn = model_turns(messages)
        if turn >= len(self.turns):
            return self.ending()
        recorded = self.turns[turn]
        text = str(recorded.get("text", ""))
        if recorded.get("undecoded"):
            return ModelReply(text=text, format_error=UNDECODED)
        calls = [
            ParsedCall(call_id=str(c["id"]), name=str(c["name"]), arguments=dict(c["arguments"]))
            for c in recorded.get("calls", [])
        ]
        return ModelReply(text=text, calls=calls, tokens=TokenCounts())

    def ending(self) -> ModelReply:
        """The session's end where the recording has no more turns (module docstring)."""
        recorded = str(self.end.get("end") or "")
        stop: StopReason = next((s for s in ENDS_WITHOUT_A_TURN if s == recorded), "turn_limit")
        why = str(self.end.get("detail") or "")
        text = f"the recording ends here ({recorded or 'no stop reason recorded'})"
        return ModelReply(text=f"{text}: {why}" if why else text, stop=stop)

    async def complete_json(
        self, messages: list[dict[str, str]], schema: dict[str, Any], sampling: Sampling
    ) -> JsonReply:
        raise AdapterError("a replay target cannot judge: give the sweep a judge model of its own")
