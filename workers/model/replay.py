"""The `replay` adapter: a stored sweep's model turns, given again in their recorded order.

No model runs. The farm fills the target's `script` in when it plans the replay, with the
turns the trial of the same scenario, prompt config, tool set, repetition and wording recorded
(scheduler/submission/replay.py): each turn's text, its calls as decoded then, and whether the
decoder could not read it; its last item says how the recorded trial ended. The calls go to
the servers as they are defined now, so a replay measures the servers, not the model.

A conversation's replies carry their user turn (`turn`): asked for a reply, the replay gives
the recorded reply at the same place, the n-th reply of the same user turn, read from the
history it is shown (its user messages, and its assistant messages after the last one). So a
turn the farm continued from, whose replies the history replaces by the expected turn, does not
move the replies of the next turn.

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
from mcp_farm.workers.model.encode import user_turn
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
    "context_overflow",
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
        recorded = self.recorded_at(messages, prompt)
        if isinstance(recorded, int):
            return self.ending(recorded)
        text = str(recorded.get("text", ""))
        if recorded.get("undecoded"):
            return ModelReply(text=text, format_error=UNDECODED)
        calls = [
            ParsedCall(call_id=str(c["id"]), name=str(c["name"]), arguments=dict(c["arguments"]))
            for c in recorded.get("calls", [])
        ]
        return ModelReply(text=text, calls=calls, tokens=TokenCounts())

    def recorded_at(self, messages: list[Message], prompt: PromptConfig) -> dict[str, Any] | int:
        """The recorded reply at the place `messages` ask for; past the recording, the user
        turn (0-based) it has no more replies for."""
        reply = model_turns(messages)
        if not any("turn" in t for t in self.turns):  # one user request: replies in order
            return self.turns[reply] if reply < len(self.turns) else 0
        turn = user_turn(messages, prompt)
        mine = [t for t in self.turns if t.get("turn") == turn]
        return mine[reply] if reply < len(mine) else turn

    def ending(self, turn: int = 0) -> ModelReply:
        """The session's end where the recording has no more turns (module docstring); in a
        conversation, the recorded end only in its last recorded turn (`turn`, 0-based), and
        the turn limit in an earlier one."""
        last = max((int(t.get("turn", 0)) for t in self.turns), default=0)
        if turn < last:
            text = f"the recording has no more replies in turn {turn + 1}"
            return ModelReply(text=text, stop="turn_limit")
        recorded = str(self.end.get("end") or "")
        stop: StopReason = next((s for s in ENDS_WITHOUT_A_TURN if s == recorded), "turn_limit")
        why = str(self.end.get("detail") or "")
        text = f"the recording ends here ({recorded or 'no stop reason recorded'})"
        return ModelReply(text=f"{text}: {why}" if why else text, stop=stop)

    async def complete_json(
        self, messages: list[dict[str, str]], schema: dict[str, Any], sampling: Sampling
    ) -> JsonReply:
        raise AdapterError("a replay target cannot judge: give the sweep a judge model of its own")
