"""A conversation: the user's turns sent one after another on the same MCP sessions and the
same message history, each turn graded as it ends so that `continue` can carry on from the
expected state after a failed one (docs/conversations.md)."""

from __future__ import annotations

import time

from mcp import MCPError

from mcp_farm.schema import (
    ExpectedCall,
    Message,
    OnTurnFailure,
    PromptConfig,
    Scenario,
    SetupCall,
    ToolCallRecord,
    TranscriptCall,
    TurnResult,
)
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.grading.conversation import ENDS, NOT_GRADED, done_steps, grade_turn
from mcp_farm.workers.mcp.connections import Connected, elicit_problem, refusal
from mcp_farm.workers.mcp.relist import trigger_change
from mcp_farm.workers.model.base import ModelClient
from mcp_farm.workers.model.encode import opening_messages
from mcp_farm.workers.session import (
    SessionState,
    failure_text,
    recorded,
    reply_loop,
    setup_owner,
)


async def run_conversation(
    state: SessionState,
    scenario: Scenario,
    prompt: PromptConfig,
    client: ModelClient,
    conn: Connected,
    seed: int,
    variant: int,
    reply_limit_s: float | None,
    on_failure: OnTurnFailure,
) -> None:
    """Send every turn of `scenario` in order; stop after a failed turn, or (`continue`) make
    its expected calls and show the model the expected turn before the next one. Each turn is
    recorded in `state.turn_results`; the history the model sees is kept apart from the stored
    transcript, which also holds the model's own replies to a failed turn."""
    tools = list(conn.tools.values())
    schemas = {t.tool: t.input_schema for t in tools}
    history = opening_messages(prompt, scenario.user_for(0, variant), tools, conn.instructions)
    state.transcript = list(history)
    for i in range(len(scenario.turns)):
        if i:
            said = Message(role="user", content=scenario.user_for(i, variant))
            history.append(said)
            state.transcript.append(said)
        start = len(history)
        state.stop_reason, state.final_answer, state.format_error = None, None, None
        turn = TurnResult(
            index=i,
            user=scenario.user_for(i, variant),
            first_call=len(state.calls),
            stop_reason="harness_error",  # until the model's part of the turn ends
            outcome="harness_error",  # graded below, and again with the whole trial
            detail=NOT_GRADED,
        )
        state.turn_results.append(turn)
        added, removed = set(conn.added), dict(conn.removed)
        try:
            view = scenario.turn_scenario(i)
            conn.asked.turn, conn.asked.script = i, list(view.elicit)
            await _event(scenario, i, conn)
            await reply_loop(state, history, view, prompt, client, conn, seed, reply_limit_s)
        finally:
            state.transcript.extend(history[start:])
            turn.call_count = len(state.calls) - turn.first_call
            turn.answer = state.final_answer
            turn.stop_reason = state.stop_reason or "turn_limit"
            turn.tools_added = sorted(conn.added - added)
            turn.tools_removed = sorted(set(conn.removed) - set(removed))
        schemas.update({t.tool: t.input_schema for t in conn.tools.values()})
        detail = state.format_error or state.limit_detail or ""
        done = state.turn_results[:i]
        verdict = grade_turn(
            scenario,
            i,
            turn,
            done,
            state.calls,
            schemas,
            detail,
            state.destructive,
            conn.asked.exchanges,
        )
        turn.outcome, turn.detail = verdict.outcome, verdict.detail
        if verdict.outcome == "pass" or i == len(scenario.turns) - 1:
            continue
        if verdict.outcome in ENDS or on_failure == "stop":
            return
        turn.model_steps = done_steps(scenario, i, turn, done, state.calls, schemas)
        expected = await _expected_turn(scenario, i, conn, turn, state.calls)
        if turn.farm_problem:
            # Later turns would start from a state the scenario did not plan for: they are not
            # sent, as under `stop`, and the trial's detail says why (docs/conversations.md).
            return
        del history[start:]
        history.extend(expected)
        state.transcript.extend(expected)


async def _event(scenario: Scenario, i: int, conn: Connected) -> None:
    """What happens before turn i's message: its `trigger` call, for `event: tools_changed`."""
    said = scenario.turns[i]
    if said.event == "tools_changed" and said.trigger is not None:
        server = setup_owner(said.trigger, conn)
        await trigger_change(conn, server, said.trigger, f"turn {i + 1}'s trigger")


async def _expected_turn(
    scenario: Scenario, i: int, conn: Connected, turn: TurnResult, calls: list[ToolCallRecord]
) -> list[Message]:
    """Bring the servers to turn i's expected state and write the expected turn: each step of
    its first route is done by the model's own call where it did it (`turn.model_steps`), else
    by the farm's call of the step's `example`, recorded in `turn.farm_calls`; then the example
    answer. The model's other calls are not undone. A farm call that does not go as its step
    expects is noted in `turn.farm_problem`, and no further call is made."""
    way = scenario.turn_scenario(i).ways()[0][1]
    shown: list[TranscriptCall] = []
    results: list[Message] = []
    for j, step in enumerate(way.expect):
        call_id = f"farm_{i}_{j}"
        made = next((c for c in calls if c.index == turn.model_steps.get(j)), None)
        if made is None:
            made = await _farm_call(scenario, i, j, step, conn)
            turn.farm_calls.append(made)
            if made.ok == step.expect_error:
                turn.farm_problem = _farm_failure(j, step, made)
                return []
        name = _shown_name(conn, made.server, made.tool)
        shown.append(TranscriptCall(id=call_id, name=name, arguments=dict(made.arguments)))
        content = made.result_text if made.ok else failure_text(made, conn)
        results.append(
            Message(role="tool", content=content, tool_call_id=call_id, name=name, farm=True)
        )
    messages = [Message(role="assistant", content="", tool_calls=shown, farm=True)] if shown else []
    answer = way.example_answer or "Done."
    return [*messages, *results, Message(role="assistant", content=answer, farm=True)]


async def _farm_call(
    scenario: Scenario, i: int, j: int, step: ExpectedCall, conn: Connected
) -> ToolCallRecord:
    """The farm's call of step j's `example`; a JSON-RPC refusal is recorded as a failed call,
    as the model's are. InfraError when the step has no example, or the server went away."""
    if step.example is None:
        raise InfraError(
            f"turn {i + 1} of {scenario.id} failed and cannot be continued from: "
            f"step {j} ({step.label}) has no `example` for the farm to call"
        )
    call = SetupCall(server=step.server, tool=step.names[0], arguments=step.example)
    server = setup_owner(call, conn)
    conn.touched.add(server)
    started = time.perf_counter()
    try:
        result = await conn.call(server, call.tool, call.arguments)
    except MCPError as exc:
        result = refusal(server, call.tool, exc)
    elicit_problem(conn)
    latency = time.perf_counter() - started
    return recorded(j, server, call.tool, call.arguments, result, latency, conn)


def _farm_failure(j: int, step: ExpectedCall, made: ToolCallRecord) -> str:
    what = (
        "worked where the step expects an error"
        if made.ok
        else f"failed: {(made.error or '')[:200]}"
    )
    return f"the farm's call of step {j} ({step.label}) {what}, so later turns were not sent"


def _shown_name(conn: Connected, server: str | None, tool: str) -> str:
    for name, spec in conn.tools.items():
        if spec.server == server and spec.tool == tool:
            return name
    return tool
