"""What a finished trial produces (TrialResult) and its provenance: the code, the machine,
every pin, and where the expected tools sat in the list it was shown."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from mcp_farm.schema.answer import (
    AnswerScore,
)
from mcp_farm.schema.expect import StateVerdict
from mcp_farm.schema.trial.records import (
    AgentOutput,
    Elicitation,
    Message,
    StepVerdict,
    TokenCounts,
    ToolCallRecord,
    TurnResult,
)
from mcp_farm.schema.trial.user import UserSimRecord
from mcp_farm.schema.usercard import FailureSource
from mcp_farm.schema.vocab import (
    Outcome,
    ReplyClock,
    ServerStart,
    StopReason,
    Tier,
    TrialStatus,
)


class ListPosition(BaseModel):
    """Where one of a scenario's expected tools sat in the list a tool-list level showed."""

    tool: str
    """The expected tool's real name."""
    server: str | None
    """The server whose listing of it was shown (its first, where two list it); None: none."""
    index: int | None
    """Its place in the shown list, 0 first; None where the list did not hold it."""
    listed: int
    """How many tools the list held."""

    def decile(self) -> int | None:
        """Which tenth of the list it sat in, 0 (the first tenth) to 9."""
        return None if self.index is None else min(9, self.index * 10 // max(1, self.listed))


class SelectionTurn(BaseModel):
    """One user message's tool selection, under a prompt config's `select:`."""

    recall: float | None
    """The share of the message's expected tools the selection held; None: it expected none."""
    tied: bool
    """Whether tools scored the same as the last one shown, so the trial's seed (which breaks
    score ties) decided which of them were shown."""
    ranks: list[int | None]
    """Per expected tool, its place (1 first) in the whole ranking, ties broken by the seed;
    None where the list did not hold it. Recall at any k is read from these."""
    seconds: float
    """Wall time the selection took (ranking included), outside the scenario's clock."""


class TrialProvenance(BaseModel):
    """What produced a result: code, machine, and every pin that changes results."""

    farm_version: str
    git_commit: str
    host: str
    node: str = ""
    """The worker node (Celery node name) that ran it; empty in the embedded mode."""
    worker_tag: str
    """The hardware tag of the queue the trial was taken from."""
    python: str
    mcp_version: str
    scenario_version: int
    prompt_version: int
    model_pins: dict[str, str]
    time_scale: float = 1.0
    """The model target's `time_scale`: its per-reply limit was `request_timeout_s` × this."""
    request_timeout_s: float | None = None
    """The model target's `request_timeout_s`; None in trials recorded before it was kept."""
    reply_limit_s: float | None = None
    """The per-reply limit that applied (`request_timeout_s` × `time_scale`), in seconds of
    `reply_clock`; None in trials recorded before it was kept."""
    reply_clock: ReplyClock | None = None
    """What that limit was measured on: `wall` (a model behind an endpoint) or `cpu` (the
    generating thread's CPU time, for a model in the worker's own process)."""
    selection_recall: list[float | None] | None = Field(
        default=None, exclude_if=lambda v: v is None
    )
    """Under a prompt config's `select:`, per user message, the share of its expected tools
    the selection held (None where none is expected); left out without selection."""
    selections: list[SelectionTurn] | None = Field(default=None, exclude_if=lambda v: v is None)
    """Under `select:`, per user message, its selection: recall, whether a tie decided it, the
    expected tools' ranks and its time; left out without selection."""
    selection_s: float | None = Field(default=None, exclude_if=lambda v: v is None)
    """Under `select:`, the trial's time in selection, all messages together: its own latency,
    outside the scenario's clock and the trial's `latency_s`; left out without selection."""
    server_tools: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Per attached server, per tool it listed: a digest of its description (`d:`) and of its
    input and output schemas (`s:`), so a replay can say which tools changed."""
    tool_positions: list[ListPosition] | None = Field(default=None, exclude_if=lambda v: v is None)
    """Under a tool-list level, where each expected tool sat in the list the trial started
    with (before any selection); left out without a level."""
    server_starts: dict[str, ServerStart] = Field(default_factory=dict, exclude_if=lambda v: not v)
    """Per attached server, how its process started: `forked` from the warm interpreter,
    `fresh` as a process of its own, `url` served at an address (no process of the trial's);
    left out in trials recorded before it was kept."""


class TrialResult(BaseModel):
    """Everything a finished trial recorded."""

    version: int = 1
    trial_id: str
    sweep_id: str
    model_id: str
    prompt_id: str
    scenario_id: str
    tier: Tier
    expected_tools: list[str]
    repetition: int
    variant: int = 0
    toolset: str = ""
    """The tool set's id; empty when the scenario ran with its own servers."""
    status: TrialStatus = "done"
    outcome: Outcome
    first_try: bool | None = None
    """Passed with every call of an expected tool doing a step and none repeated: no wrong
    attempt before the right one. None where the trial was not graded (an infrastructure or
    harness error)."""
    route: str | None = None
    """On a scenario with routes: the route the trial passed by (or, failing, was judged by)."""
    left_cassette: bool = False
    """A server replayed from a cassette (`replay:`) was called with a tool and arguments the
    cassette never recorded: the call was a tool error, and the trial says less about the
    model than one that stayed on the recording. A sweep's `left_cassette: exclude` leaves
    such trials out of its scorecard's rates."""
    stop_reason: StopReason
    detail: str = ""
    """Why the outcome was chosen, in words (first failing check)."""
    started_at: datetime
    finished_at: datetime
    latency_s: float
    first_token_s: float | None = None
    model_s: float | None = None
    """Seconds spent waiting for the model, summed over turns; None where not measured (an
    agent whose model calls did not pass the farm)."""
    tokens: TokenCounts | None = Field(default_factory=TokenCounts)
    """The model's tokens, all turns together; None where not measured (an agent whose model
    calls did not pass the farm: docs/agents.md), never zero for that."""
    turns: int = 0
    final_answer: str | None = None
    transcript: list[Message] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    """The model's calls, in order: what grading reads."""
    setup_calls: list[ToolCallRecord] = Field(default_factory=list)
    """The scenario's `setup` calls, made by the farm before the model started (indexed from
    0 on their own). Never graded, never counted as the model's; stored with the trial."""
    provenance: TrialProvenance
    answer: AnswerScore | None = None
    """The answer-quality score, for scenarios with an `answer` in sweeps that score them."""
    turn_results: list[TurnResult] = Field(default_factory=list)
    elicitations: list[Elicitation] = Field(default_factory=list)
    """Every elicitation request a server made during the trial, and its answer, in order
    (column `trial.elicitations_json`)."""
    """A conversation's turns, each with its verdict (empty for a one-prompt scenario). The
    trial passes only if every turn passed; otherwise its outcome is its first failed turn's.
    Turns never reached (after a failure under `stop`) have no entry."""
    recovered: bool | None = None
    """Whether every call that got an error result (the server's `isError`, its
    `error_pattern`, arguments it refused) was followed by a successful call that did a step
    (in a conversation, a later call of the same turn that did one of its steps); null when no
    call failed (docs/conversations.md, "Recovery after an error")."""
    steps: list[StepVerdict] = Field(default_factory=list)
    """Each expected step (on the route graded) with the call that did it or why none did, so
    a reader sees which call met which step. Empty for a conversation (each turn keeps its
    own), for open tool use, and where the trial was not graded."""
    state: StateVerdict | None = None
    """With `state:` probes: each probe expected vs found, how state and calls compared
    (`other_path`), and what decided the outcome (column `trial.state_json`); None without
    probes."""
    user_sim: UserSimRecord | None = None
    """With a simulated user: its identity, cost, errors and the final-state calls."""
    failure_source: FailureSource | None = None
    """With a simulated user: whose mistake failed the trial (`none` for a pass); null for a
    trial without one."""
    agent_output: AgentOutput | None = None
    """An agent target's stdout and stderr, bounded (column `trial.agent_output_json`); null
    for a model's trial."""
