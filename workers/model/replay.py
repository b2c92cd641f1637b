"""The `replay` adapter: a stored sweep's model turns, given again in their recorded order.

No model runs. The farm fills the target's `script` in when it plans the replay, with the
turns the trial of the same scenario, prompt config, tool set, repetition and wording recorded
(scheduler/submission/replay.py): each turn's text, its calls as decoded then, and whether the
decoder could not read it. The calls go to the servers as they are defined now, so a replay
measures the servers, not the model.
"""

from __future__ import annotations

from typing import Any

from mcp_farm.schema import (
    Message,
    ModelTarget,
    PromptConfig,
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


class ReplayClient:
    def __init__(self, target: ModelTarget) -> None:
        if target.script is None:
            raise AdapterError(
                f"model {target.id!r}: a replay target needs the recorded turns; replay a sweep "
                "with `farm replay SWEEP_ID`"
            )
        self.turns: list[dict[str, Any]] = target.script
        self.pins = {"adapter": "replay", "source_sweep": target.model}

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec], prompt: PromptConfig, seed: int
    ) -> ModelReply:
        turn = sum(1 for m in messages if m.role == "assistant") - len(prompt.few_shot)
        if turn >= len(self.turns):
            return ModelReply(text="")  # the recording ended here (a limit): nothing more
        recorded = self.turns[turn]
        text = str(recorded.get("text", ""))
        if recorded.get("undecoded"):
            return ModelReply(text=text, format_error=UNDECODED)
        calls = [
            ParsedCall(call_id=str(c["id"]), name=str(c["name"]), arguments=dict(c["arguments"]))
            for c in recorded.get("calls", [])
        ]
        return ModelReply(text=text, calls=calls, tokens=TokenCounts())

    async def complete_json(
        self, messages: list[dict[str, str]], schema: dict[str, Any], sampling: Sampling
    ) -> JsonReply:
        raise AdapterError("a replay target cannot judge: give the sweep a judge model of its own")
