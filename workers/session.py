"""The agent loop: model turn, execute its calls on the MCP servers, feed results back, repeat."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import anyio
from mcp import MCPError

from mcp_farm.schema import (
    Elicitation,
    ListPosition,
    Message,
    ProbeResult,
    PromptConfig,
    ResetCall,
    Scenario,
    SelectionTurn,
    ServerStart,
    SetupCall,
    StopReason,
    TokenCounts,
    ToolCallRecord,
    TranscriptCall,
    TurnResult,
)
from mcp_farm.schema.specs import DISTRACTOR_SERVER
from mcp_farm.schema.trial import AgentOutput
from mcp_farm.workers.clock import clock_stopped
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.grading.counting import repeats_allowed
from mcp_farm.workers.mcp.connections import (
    WHOLE_KEEP_CHARS,
    WHOLE_STORE_CHARS,
    Connected,
    execute,
    failure_text,
    recorded,
    shown_text,
    whole_record,
)
from mcp_farm.workers.mcp.relist import list_again, relist
from mcp_farm.workers.model.base import ModelClient
from mcp_farm.workers.model.encode import opening_messages
from mcp_farm.workers.model.safejson import arguments_key

# A tool call is made and recorded with the connection (workers/mcp/connections.py); its names
# stay importable from here.
__all__ = [
    "WHOLE_KEEP_CHARS",
    "WHOLE_STORE_CHARS",
    "SessionState",
    "execute",
    "failure_text",
    "recorded",
    "reply_loop",
    "resets",
    "run_setup",
    "setup_owner",
    "show_tools",
    "shown_text",
    "whole_record",
]


@dataclass
class SessionState:
    """Filled in as the session runs, so a timeout or crash keeps everything recorded so far."""

    transcript: list[Message] = field(default_factory=list)
    calls: list[ToolCallRecord] = field(default_factory=list)
    setup_calls: list[ToolCallRecord] = field(default_factory=list)
    """The scenario's setup calls, made before the model's first turn; never graded."""
    tokens: TokenCounts = field(default_factory=TokenCounts)
    turns: int = 0
    final_answer: str | None = None
    stop_reason: StopReason | None = None
    format_error: str | None = None
    first_token_s: float | None = None
    model_s: float = 0.0
    """Seconds spent waiting for the model (tokens/s is completion tokens over this)."""
    model_measured: bool = True
    """Whether the model's calls passed the farm, so `tokens` and `model_s` measure them:
    false for an agent (workers/agent/) until one of its model calls goes through the farm."""
    agent_output: AgentOutput | None = None
    """An agent's stdout and stderr, bounded (workers/agent/), filled in as its session ends."""
    clock: anyio.CancelScope | None = None
    """The scenario's wall-clock limit (`time_limit_s`), stopped while the model replies."""
    limit_detail: str = ""
    """Which limit ended the session, in words, when the model's did."""
    left_cassette: bool = False
    """A call got a cassette server's answer for a call it never recorded."""
    server_tools: dict[str, dict[str, str]] = field(default_factory=dict)
    server_starts: dict[str, ServerStart] = field(default_factory=dict)
    """Per attached server, how its process started (recorded in the provenance)."""
    selection_recall: list[float | None] | None = None
    """Under tool selection, the recall of each user message's selection (workers/selection/)."""
    selections: list[SelectionTurn] | None = None
    """Under tool selection, each user message's selection: recall, tie, ranks, time."""
    tool_positions: list[ListPosition] | None = None
    """Under a tool-list level, where each expected tool sat in the list (workers/mcp/toollist.py)."""
    """What the attached servers listed (Connected.listed), for the trial's provenance."""
    turn_results: list[TurnResult] = field(default_factory=list)
    """A conversation's turns as they ran (workers/conversation.py); graded at the end."""
    destructive: frozenset[str] = frozenset()
    """The attached tools their servers mark `destructiveHint: true` (`confirm_destructive`)."""
    read_only: frozenset[str] = frozenset()
    """The attached tools their servers mark `readOnlyHint: true`: `calls: strict` lets their
    copies be."""
    elicitations: list[Elicitation] = field(default_factory=list)
    """The servers' elicitation requests and the scripted answers, as they came."""
    probes: list[ProbeResult] = field(default_factory=list)
    """The scenario's own `state:` probes, run after the last turn (docs/state.md)."""

    @property
    def measured_tokens(self) -> TokenCounts | None:
        """The trial's tokens; None, "not measured", where the model's calls did not pass
        the farm (never zero for that)."""
        return self.tokens if self.model_measured else None

    @property
    def measured_model_s(self) -> float | None:
        """The trial's time in the model; None where its calls did not pass the farm."""
        return self.model_s if self.model_measured else None


def setup_owner(call: SetupCall, conn: Connected, role: str = "setup") -> str:
    """The attached server a setup call goes to; InfraError when there is no single one, its
    message naming the call by `role` (`setup`, `turn 2's trigger`, …)."""
    # The distractors are the farm's (a tool-list level), never a setup call's server.
    listed = {
        t.server
        for t in conn.tools.values()
        if t.tool == call.tool and t.server != DISTRACTOR_SERVER
    }
    hidden = {server for server, tools in conn.control.items() if call.tool in tools}
    owners = sorted((listed | hidden) & ({call.server} if call.server else set(conn.sessions)))
    if len(owners) == 1:
        return owners[0]
    if call.server and call.server not in conn.sessions:
        attached = ", ".join(sorted(conn.sessions)) or "none"
        raise InfraError(
            f"{role} names server {call.server!r}, which this trial does not attach "
            f"(attached: {attached})"
        )
    if owners:
        raise InfraError(
            f"{role} tool {call.tool!r} is listed by {', '.join(owners)}: "
            "give the call its `server:`"
        )
    where = f"server {call.server!r}" if call.server else "any attached server"
    raise InfraError(f"{role} tool {call.tool!r} is not listed by {where}")


def resets(conn: Connected) -> list[tuple[str, SetupCall]]:
    """The reset calls of the attached servers that declare one (`reset: {tool: ...}`), each
    with how messages name it."""
    return [
        (f"reset of {name}", SetupCall(server=name, tool=s.reset.tool, arguments=s.reset.arguments))
        for name, s in conn.servers.items()
        if isinstance(s.reset, ResetCall)
    ]


async def run_setup(
    state: SessionState, setup: list[SetupCall], conn: Connected, timeout_s: float
) -> None:
    """Make the attached servers' reset calls, then the scenario's setup calls, in order,
    before the model starts, then list the tools of every server they went to again: the
    trial starts from that list (`list_again`). Each call is recorded in `state.setup_calls`;
    one that fails, or does not answer within `timeout_s`, raises InfraError: the scenario
    could not be set up, which is never the model's fault."""
    calls = [*resets(conn), *((f"setup[{k}]", call) for k, call in enumerate(setup))]
    for index, (label, call) in enumerate(calls):
        server = setup_owner(call, conn)
        where = f"{label} {server}.{call.tool}"
        # Seeded state must not reach the next trial: the pool resets or replaces the server.
        conn.touched.add(server)
        started = time.perf_counter()
        try:
            with anyio.move_on_after(timeout_s) as scope:
                result = await conn.call(server, call.tool, call.arguments)
        except MCPError as exc:
            raise InfraError(f"{where} failed: {exc}") from None
        if scope.cancelled_caught:
            raise InfraError(f"{where} gave no answer within {timeout_s:g} s")
        record = recorded(
            index, server, call.tool, call.arguments, result, time.perf_counter() - started, conn
        )
        state.setup_calls.append(record)
        if not record.ok:
            raise InfraError(
                f"{where} failed, so the scenario could not be set up: {(record.error or '')[:300]}"
            )
    await list_again(conn, conn.touched, timeout_s)


def show_tools(
    state: SessionState, messages: list[Message], prompt: PromptConfig, conn: Connected
) -> None:
    """After the tools offered changed (a server's new list, a new selection): text modes list
    the tools in the system message, so show the current list there (native mode sends them
    with every request)."""
    if prompt.mode == "native" or not messages or messages[0].role != "system":
        return
    system = opening_messages(prompt, "", list(conn.tools.values()), conn.instructions)
    messages[0] = system[0]
    if state.transcript is not messages:  # a conversation keeps its own record
        state.transcript.append(system[0])


async def reply_loop(
    state: SessionState,
    messages: list[Message],
    scenario: Scenario,
    prompt: PromptConfig,
    client: ModelClient,
    conn: Connected,
    seed: int,
    reply_limit_s: float | None,
) -> None:
    """The model's part of one user request: reply, run its calls, feed the results back,
    until it answers or a limit ends it (at most `scenario.max_turns` replies). `messages` is
    the history the model is shown; each reply and result is appended to it."""
    seen: dict[str, int] = {}
    first = state.turns
    for _reply in range(scenario.max_turns):
        if await relist(conn):
            show_tools(state, messages, prompt, conn)
        tools = list(conn.tools.values())
        turn = state.turns
        asked = time.perf_counter()
        with clock_stopped(state.clock), anyio.move_on_after(reply_limit_s) as waited:
            reply = await client.complete(messages, tools, prompt, seed + turn)
        state.model_s += time.perf_counter() - asked
        state.turns = turn + 1
        if waited.cancelled_caught:
            state.stop_reason = "model_time_limit"
            state.limit_detail = (
                f"the model gave no reply within {reply_limit_s:g} s (turn {turn - first + 1})"
            )
            return
        if reply.stop is not None:
            state.stop_reason, state.limit_detail = reply.stop, reply.text
            return
        state.tokens = state.tokens.add(reply.tokens)
        if state.first_token_s is None:
            state.first_token_s = reply.first_token_s
        if reply.format_error:
            messages.append(Message(role="assistant", content=reply.text, undecoded=True))
            state.format_error = reply.format_error
            state.stop_reason = "format_error"
            return
        if not reply.calls:
            messages.append(Message(role="assistant", content=reply.text))
            state.final_answer = reply.text
            state.stop_reason = "answer"
            return
        messages.append(
            Message(
                role="assistant",
                content=reply.text,
                tool_calls=[
                    TranscriptCall(id=c.call_id, name=c.name, arguments=c.arguments)
                    for c in reply.calls
                ],
            )
        )
        for call in reply.calls:
            record = await execute(call, len(state.calls), conn)
            state.calls.append(record)
            content = record.result_text if record.ok else failure_text(record, conn)
            messages.append(
                Message(role="tool", content=content, tool_call_id=call.call_id, name=call.name)
            )
            key = arguments_key(call.name, call.arguments)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > repeats_allowed(scenario, record.tool, state.read_only):
                state.stop_reason = "tool_loop"
                return
    state.stop_reason = "turn_limit"
