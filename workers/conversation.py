"""A trial's turns sent one after another on the same MCP sessions and the same message history,
each turn graded as it ends so that `continue` can carry on from the expected state after a
failed one (docs/conversations.md). A one-prompt scenario runs here too, as one turn
(`Scenario.dialogue`): this is the one place a turn is run and graded as it ends."""

from __future__ import annotations

import time
from typing import Any

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
from mcp_farm.schema.expect import DivergedBy
from mcp_farm.workers.agent import AgentClient
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.grading.conversation import ENDS, NOT_GRADED, done_steps, grade_turn
from mcp_farm.workers.mcp.connections import (
    Connected,
    elicit_problem,
    failure_text,
    recorded,
    refusal,
    reselect,
)
from mcp_farm.workers.mcp.probes import Saved, run_probes
from mcp_farm.workers.mcp.relist import trigger_change
from mcp_farm.workers.model.base import ModelClient
from mcp_farm.workers.model.encode import opening_messages
from mcp_farm.workers.session import SessionState, reply_loop, setup_owner, show_tools
from mcp_farm.workers.state import turn_by_state


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
    """Send every turn of `scenario` (a one-prompt scenario's one) in order; stop after a failed
    turn, or (`continue`) make its expected calls and show the model the expected turn before
    the next one. Each turn is recorded in `state.turn_results`; the history the model sees is
    kept apart from the stored transcript, which also holds the model's own replies to a failed
    turn."""
    # Graded by state, a failed turn is set back before `continue` goes on (docs/state.md); the
    # kept states are scratch folders, removed however the conversation ends.
    saves = Saved() if on_failure == "continue" and scenario.grading != "calls" else None
    try:
        await reselect(
            conn, scenario.user_for(0, variant), scenario.turn_scenario(0).expected_tools
        )
        tools = list(conn.tools.values())
        schemas = {t.tool: t.input_schema for t in tools}
        diverged: DivergedBy | None = None
        history = opening_messages(prompt, scenario.user_for(0, variant), tools, conn.instructions)
        state.transcript = list(history)
        last = len(scenario.dialogue()) - 1
        for i in range(last + 1):
            if i:
                asked = scenario.user_for(i, variant)
                if await reselect(conn, asked, scenario.turn_scenario(i).expected_tools):
                    show_tools(state, history, prompt, conn)
                said = Message(role="user", content=asked)
                history.append(said)
                state.transcript.append(said)
            start = len(history)
            turn = _open_turn(state, scenario, i, variant)
            added, removed = set(conn.added), dict(conn.removed)
            try:
                view = scenario.turn_scenario(i)
                conn.asked.turn, conn.asked.script = i, list(view.elicit)
                conn.asked.turn_entries = len(view.elicit) - len(scenario.elicit)
                await _event(scenario, i, conn)
                turn.diverged, turn.diverged_by, diverged = diverged is not None, diverged, None
                if saves is not None:
                    await saves.save(conn)
                if isinstance(client, AgentClient):  # an MCP client of its own (docs/agents.md)
                    await client.turn(state, history, scenario.user_for(i, variant), reply_limit_s)
                else:
                    await reply_loop(
                        state, history, view, prompt, client, conn, seed, reply_limit_s
                    )
            finally:
                state.transcript.extend(history[start:])
                turn.call_count = len(state.calls) - turn.first_call
                turn.answer = state.final_answer
                turn.stop_reason = state.stop_reason or "turn_limit"
                turn.tools_added = sorted(conn.added - added)
                turn.tools_removed = sorted(set(conn.removed) - set(removed))
            schemas.update({t.tool: t.input_schema for t in conn.tools.values()})
            await _grade(state, scenario, i, turn, schemas, conn)
            outcome, _ = turn_by_state(scenario, turn)
            if outcome == "pass" or i == last:
                continue
            if outcome in ENDS or on_failure == "stop":
                return
            done = state.turn_results[:i]
            turn.model_steps = done_steps(scenario, i, turn, done, state.calls, schemas)
            if saves is not None:
                # Servers the turn's calls may have changed (a read-only tool changes nothing).
                made = state.calls[turn.first_call :]
                called = {c.server for c in made if c.server and c.tool not in state.read_only}
                turn.set_back = await saves.put_back(conn, called)
                turn.restored = "cannot" not in turn.set_back.values()
                if turn.restored:
                    # The model's calls were undone: the farm makes every step.
                    turn.model_steps = {}
            expected = await _expected_turn(scenario, i, conn, turn, state.calls)
            if saves is not None and not turn.farm_problem:
                diverged = await _diverged(scenario, i, conn, turn)
            if turn.farm_problem:
                # Later turns would start from a state the scenario did not plan for: they are
                # not sent, as under `stop`, and the trial's detail says why
                # (docs/conversations.md).
                return
            del history[start:]
            history.extend(expected)
            state.transcript.extend(expected)
    finally:
        if saves is not None:
            saves.close()


def _open_turn(state: SessionState, scenario: Scenario, i: int, variant: int) -> TurnResult:
    """Turn i's result, recorded in `state.turn_results` before the model's part of the turn
    (so a turn cut short is still there), with the per-turn parts of `state` cleared."""
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
    return turn


async def _grade(
    state: SessionState,
    scenario: Scenario,
    i: int,
    turn: TurnResult,
    schemas: dict[str, dict[str, Any]],
    conn: Connected,
) -> None:
    """Grade turn i as it ends (its calls against the turns before it), then run its probes."""
    detail = state.format_error or state.limit_detail or ""
    verdict = grade_turn(
        scenario,
        i,
        turn,
        state.turn_results[:i],
        state.calls,
        schemas,
        detail,
        state.destructive,
        conn.asked.exchanges,
        state.read_only,
    )
    turn.outcome, turn.detail = verdict.outcome, verdict.detail
    turn.probes = await run_probes(scenario.dialogue()[i].state, conn, i)


async def _diverged(
    scenario: Scenario, i: int, conn: Connected, turn: TurnResult
) -> DivergedBy | None:
    """Whether the next turn starts from a state other than the expected one after failed turn
    i was continued (its probes, run again, do not all fit; or, with no probe to measure it,
    the servers could not be set back), and whose doing that is: the model's where its calls
    stayed (no way back for a server it called), the farm's where everything was set back and
    redone. None: it starts from the expected state."""
    by: DivergedBy = "farm" if turn.restored else "model"
    probes = scenario.dialogue()[i].state
    if not probes:
        return None if turn.restored else by
    settled = await run_probes(probes, conn, i)
    return None if all(p.passed for p in settled) else by


async def _event(scenario: Scenario, i: int, conn: Connected) -> None:
    """What happens before turn i's message: its `trigger` call, for `event: tools_changed`."""
    said = scenario.dialogue()[i]
    if said.event == "tools_changed" and said.trigger is not None:
        role = f"turn {i + 1}'s trigger"
        server = setup_owner(said.trigger, conn, role)
        await trigger_change(conn, server, said.trigger, role)


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
    server = setup_owner(call, conn, f"turn {i + 1}'s farm call of step {j}")
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
