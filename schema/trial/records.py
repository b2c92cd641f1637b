"""What a trial recorded, piece by piece: the transcript, its tool calls, tokens, the agent's
output, each step's and each turn's verdict, and the elicitation exchanges."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from mcp_farm.schema.expect import DivergedBy, ProbeResult, SetBack
from mcp_farm.schema.vocab import (
    ElicitAction,
    Outcome,
    StopReason,
)


class TranscriptCall(BaseModel):
    """A tool call as the transcript keeps it, inside the assistant message that made it."""

    id: str
    """The id the model (or the decoder) gave the call; its tool message answers to it."""
    name: str
    """The tool's name as the model saw it."""
    arguments: dict[str, Any]


class Message(BaseModel):
    """One entry of the transcript."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: list[TranscriptCall] | None = None
    """Calls the assistant made in this message."""
    tool_call_id: str | None = None
    name: str | None = None
    undecoded: bool = False
    """An assistant message the decoder took for an attempted tool call it could not decode
    (the trial's format_error): audit stream, never the answer's prose."""
    farm: bool = Field(default=False, exclude_if=lambda v: v is False)
    """Written by the farm, not the model: the expected turn shown in place of a failed one
    (`on_turn_failure: continue`). Left out when false."""


class TokenCounts(BaseModel):
    """Tokens by phase, as reported by the endpoint (zero where it reports nothing). A trial
    whose model calls the farm never saw (an agent's, docs/agents.md) has none at all: its
    `tokens` is None, "not measured", never zero."""

    prompt: int = 0
    completion: int = 0

    def add(self, other: TokenCounts) -> TokenCounts:
        return TokenCounts(
            prompt=self.prompt + other.prompt, completion=self.completion + other.completion
        )


AGENT_OUTPUT_BYTES = 8192
"""Bytes of an agent's stdout and of its stderr kept on its trial: the last this many of each."""


class AgentOutput(BaseModel):
    """What an agent's command wrote over its trial (every run of it), kept bounded: the last
    AGENT_OUTPUT_BYTES of its stdout and of its stderr. The agent's own text, untrusted:
    control characters are written as escapes here, and every page escapes it again."""

    stdout: str = ""
    """The end of its stdout: in `oneshot`, each run's answer in turn; in `jsonl`, the lines
    it wrote."""
    stderr: str = ""
    """The end of its stderr, all runs together."""
    stdout_cut: bool = False
    """It wrote more on stdout than is kept: what is kept is the end."""
    stderr_cut: bool = False
    """It wrote more on stderr than is kept: what is kept is the end."""


class ToolCallRecord(BaseModel):
    """One tool call the model made, whether or not it could be executed."""

    index: int
    server: str | None
    """The server that owns the tool; None when the name matched no listed tool."""
    tool: str
    arguments: dict[str, Any]
    ok: bool
    """False when the tool raised, was unknown, or the call failed."""
    error: str | None = None
    result_text: str = ""
    """The tool's text result as the model was shown it (cut at the server's `result_chars`)."""
    whole_text: str = Field(default="", exclude=True, repr=False)
    """The whole result, when the model was shown less of it: held by the worker for chained
    values, never stored or sent (see `whole_result`)."""
    result_digest: str = ""
    """sha256 of the full text result."""
    whole_json: str = ""
    """What replay compares beyond the transcript, as JSON (`whole_record`,
    workers/mcp/connections.py): `text`, the whole text where the model was not shown it as it
    is (cut, or a failure shown as `Error: …`), `structured`, the structured content, and
    `structured_digest`, its sha256; each part kept up to WHOLE_STORE_CHARS,
    `text_cut`/`structured_cut` marking a longer one.
    `{}` for a result with nothing beyond the transcript; empty when no server answered."""
    latency_s: float = 0.0

    @property
    def whole_result(self) -> str:
        """The whole text result, where chained values are looked for."""
        return self.whole_text or self.result_text


class StepVerdict(BaseModel):
    """One expected step as the grader found it: the call that did it, or why none did."""

    step: int
    """0-based step number on the route graded (the scenario's own steps without routes)."""
    label: str
    """The step's tool (or tools) as written in the scenario."""
    call: int | None = None
    """Index (in the trial's `tool_calls`) of the call that did the step: the one the steps'
    placement in an allowed order chose; where no such order exists, the first call that met
    the step (the trial's detail says which step is out of order). None when no call met it."""
    met_by: list[int] = Field(default_factory=list)
    """Every call that met the step's matchers, in call order (a step done twice lists both)."""
    problem: str = ""
    """Why no call did the step (a wrong argument, never called, out of order); empty when one
    did."""


class TurnResult(BaseModel):
    """One turn of a conversation: what the model did in it, and its own verdict."""

    index: int
    """0-based turn number."""
    user: str
    """The user's message as sent (the trial's wording)."""
    first_call: int
    """Index (in the trial's `tool_calls`) of this turn's first call; its calls follow."""
    call_count: int = 0
    stop_reason: StopReason
    """How the model's part of this turn ended."""
    answer: str | None = None
    """The model's last reply of the turn (a question, for a turn that must ask)."""
    outcome: Outcome
    detail: str = ""
    first_try: bool | None = None
    route: str | None = None
    farm_calls: list[ToolCallRecord] = Field(default_factory=list)
    """After a failed turn under `continue`: the expected calls of the steps the model did not
    do, made by the farm in step order (each record's `index` is the step it made), whose
    results later turns may chain from."""
    model_steps: dict[int, int] = Field(default_factory=dict)
    """After a failed turn under `continue`: the steps of the expected turn the model's own
    calls had done, each with the index (in the trial's `tool_calls`) of the call that did it.
    The farm does not make these again; later turns chain from the model's call."""
    farm_problem: str = ""
    """After a failed turn under `continue`: why the farm could not bring the servers to the
    expected state (one of its calls failed, or worked where the step expects an error); the
    conversation stopped after this turn. Empty when it could."""
    tools_added: list[str] = Field(default_factory=list)
    """Tools (as the model sees them) a server listed anew before or during this turn, after
    its `notifications/tools/list_changed`."""
    tools_removed: list[str] = Field(default_factory=list)
    """Tools a server stopped listing before or during this turn; calling one is `wrong_tool`."""
    steps: list[StepVerdict] = Field(default_factory=list)
    """This turn's expected steps as the grader found them (empty for a turn that expects no
    call)."""
    probes: list[ProbeResult] = Field(default_factory=list)
    """The turn's `state:` probes as run after it (docs/state.md)."""
    restored: bool = False
    """This turn failed under `continue` and the farm set every server back to the state
    before it, then made all its expected calls (docs/state.md)."""
    set_back: dict[str, SetBack] = Field(default_factory=dict)
    """After a failed turn under `continue` graded by state: per attached server, what the
    farm did to it (SetBack); all are set back, or none."""
    diverged: bool = False
    """This turn started from a state the probes found diverged after a failed turn before
    it was continued, so its verdict is less sure (whose doing: `diverged_by`)."""
    diverged_by: DivergedBy | None = None
    """With `diverged`: `model` (the failed turn could not be set back, its calls stayed) or
    `farm` (everything was set back and redone, and the probes still did not fit)."""


class Elicitation(BaseModel):
    """One elicitation exchange: a server asked the user for input during a call, and how the
    scripted user answered (docs/conversations.md, "Servers that ask the user")."""

    turn: int = 0
    """0-based turn the request came in (0 for a one-prompt scenario)."""
    call: int | None = None
    """Index (in the trial's `tool_calls`) of the model's call it came during; None during a
    call the farm made (setup, a trigger, a continued turn's expected calls)."""
    server: str
    message: str
    """What the server told the user (the request's `message`)."""
    requested_schema: dict[str, Any] = Field(default_factory=dict)
    """The form the server asked for (the request's `requestedSchema`); empty in URL mode."""
    mode: Literal["form", "url"] = "form"
    action: ElicitAction
    """How the user answered."""
    content: dict[str, Any] | None = None
    """The values sent with `accept`."""
    scripted: bool
    """False: no `elicit` entry matched, so the farm declined it."""
