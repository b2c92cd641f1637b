"""The Celery payload (TrialSpec) and what a trial produces (TrialResult, ToolCallRecord)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp_farm.schema.answer import (
    AnswerScore,
    ToolSet,
)
from mcp_farm.schema.expect import DivergedBy, GradeBy, ProbeResult, SetBack, StateVerdict
from mcp_farm.schema.ids import digest
from mcp_farm.schema.specs import (
    CallCounting,
    JudgeSettings,
    ModelTarget,
    OnTurnFailure,
    PromptConfig,
    ToolListLevel,
    UserModel,
)
from mcp_farm.schema.usercard import FailureSource
from mcp_farm.schema.vocab import (
    ElicitAction,
    Outcome,
    ReplyClock,
    ServerStart,
    StopReason,
    Tier,
    TrialStatus,
)


class ScenarioRef(BaseModel):
    """A scenario by id and version, and the suite it lives in."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    version: int
    suite: str


class TrialSpec(BaseModel):
    """One trial: the only payload a worker receives. JSON in, JSON out."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = 1
    """Payload format version."""
    sweep_id: str
    model: ModelTarget
    prompt: PromptConfig
    scenario: ScenarioRef
    repetition: int = Field(ge=0)
    variant: int = Field(default=0, ge=0)
    """Which wording of the request: 0 the scenario's prompt, k its k-th paraphrase."""
    seed: int
    """Sampling seed for this repetition."""
    toolset: ToolSet | None = None
    """The tool set replacing the scenario's own servers; None: the scenario's servers."""
    judge: JudgeSettings | None = None
    """Answer-quality scoring for scenarios with an `answer`; None: no answer scoring."""
    calls: CallCounting | None = Field(default=None, exclude_if=lambda v: v is None)
    """The sweep's override of the scenario's `calls`; None: the scenario's own. Left out of
    the payload when unset, as `result_chars` is, so older payloads and ids stay as they were."""
    result_chars: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """The sweep's override of the servers' `result_chars`; None: each server's own."""
    on_turn_failure: OnTurnFailure | None = Field(default=None, exclude_if=lambda v: v is None)
    """The sweep's override of a conversation's `on_turn_failure`; None: the scenario's own.
    Set only on conversations' trials, and left out when unset, so other ids stay as they were."""
    confirm_destructive: bool | None = Field(default=None, exclude_if=lambda v: v is None)
    """The sweep's `confirm_destructive: true`, on conversations' trials only; None: the
    scenario's own. Left out when unset, so other ids stay as they were."""
    grade_by: GradeBy | None = Field(default=None, exclude_if=lambda v: v is None)
    """The sweep's `grade_by`, on the trials of scenarios with `state:` probes only; None: the
    scenario's own. Left out when unset, so other ids stay as they were."""
    user: UserModel | None = Field(default=None, exclude_if=lambda v: v is None)
    """The sweep's simulated user, on the trials of scenarios with a `user_sim` card only;
    left out when unset, so other trials keep their ids."""
    user_seed: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """The user seed index (0..m-1) of a simulated-user trial in a sweep with `user_model.seeds:
    m > 1`; None otherwise (the user seed follows the repetition), and then left out, so
    other trials keep their ids."""
    user_arm: Literal["no_user"] | None = Field(default=None, exclude_if=lambda v: v is None)
    """`no_user`: a scenario with a card run with no user, every fact of the card in the
    opening (the sweep's `user_arms`); None: as the scenario says. Left out when unset."""
    tool_list: ToolListLevel | None = Field(default=None, exclude_if=lambda v: v is None)
    """The trial's tool-list level (distractors, descriptions, names; the sweep's `tool_list`);
    None: the servers' own list as listed. Left out when unset, so other trials keep their ids."""
    tool_rendering: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """LOCAL_TOOL_RENDERING on the trials of a `local` model in `native` mode (how the tools are
    shown to it); None, and left out, on every other trial, so their ids stay as they were."""
    trial_id: str = ""
    """sha256 of the canonical JSON of everything above; filled in when empty, checked when not."""

    @model_validator(mode="after")
    def _fill_or_check_id(self) -> TrialSpec:
        expected = digest(self.identity())
        if not self.trial_id:
            object.__setattr__(self, "trial_id", expected)
        elif self.trial_id != expected:
            raise ValueError(f"trial_id {self.trial_id[:12]} does not match its payload")
        return self

    def identity(self) -> dict[str, Any]:
        """What the trial id is the digest of. The optional fields are left out when unset, so
        trials of sweeps without them keep the ids they always had."""
        unset = {name for name in ("toolset", "judge") if getattr(self, name) is None}
        return self.model_dump(mode="json", exclude={"trial_id", *unset})

    @property
    def toolset_id(self) -> str:
        return self.toolset.id if self.toolset else ""


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
    """What replay compares beyond the transcript, as JSON (workers/session.py `whole_record`):
    `text`, the whole text where the model was not shown it as it is (cut, or a failure shown
    as `Error: …`), `structured`, the structured content, and `structured_digest`, its sha256;
    each part kept up to WHOLE_STORE_CHARS, `text_cut`/`structured_cut` marking a longer one.
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


class UserIdentity(BaseModel):
    """Which simulated user a trial met: trials of different identities are not pooled
    without saying so (docs/simulated-user.md)."""

    model_id: str
    """The user model target's id."""
    model_key: str
    """ModelTarget.key() of the user model: its whole target, pins included."""
    pins: dict[str, str] = Field(default_factory=dict)
    """What the user model's adapter reports about its serving stack."""
    temperature: float
    seed: int
    """This trial's user seed: the sweep's user seed plus the repetition, or plus the user seed
    index under `user_model.seeds: m > 1` (then the level of the user in the variance split)."""
    guideline: str
    """The guideline's version (e.g. `v1`), the user's behaviour rules."""
    max_tokens: int | None = None
    """Tokens one user message may take (`user_model.max_tokens`): a shorter limit cuts the
    user's messages, so it is another user. None for a user without a model (frozen, no-user)
    and in records written before it was kept."""

    @property
    def pool_key(self) -> str:
        """What trials must share to be pooled as one user: model (target and reported pins),
        temperature, message length limit and guideline; the seed varies by repetition on
        purpose. A record without `max_tokens` keeps the key it was stored under."""
        pinned = digest({"target": self.model_key, "pins": self.pins})[:8]
        limit = "" if self.max_tokens is None else f" max_tokens={self.max_tokens}"
        return (
            f"{self.model_id} t={self.temperature:g}{limit} guideline {self.guideline} ({pinned})"
        )


UserErrorKind = Literal["invented", "left_early", "volunteered", "off_script"]
"""A simulated user's mistake: `invented` a fact on neither its card nor in what the agent said;
`off_script` a message that does not play the user (empty, an echo of its own instructions, or
no answer to the agent's question for a card fact);
`left_early` stopped (the stop marker) in answer to the agent's question before the outcome it
came for was reached; `volunteered` gave a fact its card keeps for when it is asked (`on_request`)
when the agent's reply before had asked nothing."""


class UserError(BaseModel):
    """A simulated user's message that holds a mistake of one kind (`kind`)."""

    message: int
    """0-based index of the user's message (0 is the opening, which is the card's own; a
    parting message, never sent to the agent, has the next index after the last one sent)."""
    kind: UserErrorKind = "invented"
    """What the mistake was; records written before the kinds are all `invented`."""
    facts: list[str]
    """The offending pieces of text, as the user wrote them (empty for `left_early`)."""
    said: str
    """The whole message, as sent (for `left_early`, the parting message, or empty)."""

    def describe(self) -> str:
        """One line for a person: the message, the kind and its pieces. Plain text: the
        pieces are the user model's words, so a page or a terminal escapes the line."""
        if self.kind == "left_early":
            return f"message {self.message}: left early (stopped at the agent's question)"
        if self.kind == "off_script":
            return f"message {self.message}: off script, {'; '.join(self.facts)}"
        return f"message {self.message}: {self.kind} {', '.join(self.facts)}"


class UserSimRecord(BaseModel):
    """What a trial with a simulated user recorded of the user: who it was, what it cost (kept
    apart from the agent's tokens and time), how the conversation ended, and its mistakes."""

    identity: UserIdentity
    messages: int = 1
    """User messages sent, the opening included."""
    first_calls: list[int] = Field(default_factory=list)
    """Per user message: the index (in the trial's `tool_calls`) of the first call the agent
    made in reply to it."""
    ended: Literal["user_stop", "max_turns", "agent_stop"] = "agent_stop"
    """`user_stop`: the user wrote the stop marker; `max_turns`: the card's turn limit;
    `agent_stop`: the agent's part ended otherwise than with a reply (a limit, a format error,
    a loop) or the session broke."""
    tokens: TokenCounts = Field(default_factory=TokenCounts)
    """The user model's tokens, never counted in the trial's (the agent's) `tokens`."""
    seconds: float = 0.0
    """Seconds spent on the user: waiting for the user model, and reading and writing the
    cache of user turns; taken out of the trial's `latency_s`."""
    cached: int = 0
    """User messages taken from the cache of user turns (temperature 0 only): they cost no
    user tokens, only the cache read's seconds."""
    errors: list[UserError] = Field(default_factory=list)
    state_calls: list[ToolCallRecord] = Field(default_factory=list)
    """The scenario's `final_state` read calls, made by the farm after the conversation."""


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
