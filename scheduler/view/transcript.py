"""One trial told in order, for the web page and the terminal alike: setup calls, the user's
turns, the model's prose, each call with its arguments, result, error and timing, cut notices;
and the grader's verdict beside the scenario's expected steps."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_farm.schema import FarmError, StateVerdict, UserSimRecord

CUT_NOTICE = re.compile(r"\[result cut: \d+ more characters not shown\]")
"""What the session appends to a result it cut at the server's `result_chars`."""
STEP_NAMED = re.compile(r"\bstep (\d+) \(")
"""How the grader names the step at fault: `step 1 (read_file) never called`."""
TOOL_NAMED = re.compile(r"^(?:calls: strict: call \d+ \()?([\w|-]+)[.:)]")
"""How it names the tool of the call at fault: `read_file.path: …`, `read_file: …`."""

Kind = Literal["setup", "system", "user", "assistant", "call", "undecoded", "elicit"]


@dataclass
class Entry:
    """One thing that happened, in the order it happened."""

    kind: Kind
    text: str = ""
    """Prose (user, assistant, system), or the tool's name for a call."""
    arguments: str = ""
    """A call's arguments as JSON."""
    result: str | None = None
    """The result as the model was shown it; None when the transcript holds none."""
    cut: bool = False
    """The result was cut at the server's `result_chars`."""
    ok: bool = True
    error: str | None = None
    latency_s: float | None = None
    index: int | None = None
    """The call's index among the model's calls (the tool_call row), or the setup call's."""
    server: str | None = None


def _elicited(trial: Any) -> dict[int | None, list[Entry]]:
    """The trial's elicitation exchanges as entries, by the call they came during (None: a
    call the farm made). `text` is the server's message, `arguments` the requested schema,
    `result` the user's answer; `ok` is false for a request no `elicit` entry answered."""
    found: dict[int | None, list[Entry]] = {}
    for x in _loads(getattr(trial, "elicitations_json", None), []):
        answer = str(x.get("action"))
        if x.get("content") is not None:
            answer += " " + _dumps(x.get("content"))
        entry = Entry(
            "elicit",
            text=str(x.get("message", "")),
            arguments=_dumps(x.get("requested_schema") or {}),
            result=answer + ("" if x.get("scripted") else " (unscripted: declined by the farm)"),
            ok=bool(x.get("scripted")),
            index=x.get("call"),
            server=x.get("server"),
        )
        found.setdefault(x.get("call"), []).append(entry)
    return found


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _loads(raw: str | None, default: Any) -> Any:
    try:
        return json.loads(raw) if raw else default
    except ValueError:
        return default


def entries(trial: Any, calls: list[Any]) -> list[Entry]:
    """The trial's story from its row and its tool_call rows. Calls are numbered as the
    tool_call rows are (in the order the model made them), results found by call id."""
    found = [
        Entry(
            "setup",
            text=str(c.get("tool")),
            arguments=_dumps(c.get("arguments")),
            result=c.get("result_text") or None,
            ok=bool(c.get("ok", True)),
            error=c.get("error"),
            latency_s=c.get("latency_s"),
            index=c.get("index"),
            server=c.get("server"),
        )
        for c in _loads(trial.setup_json, [])
    ]
    messages = _loads(trial.transcript_json, [])
    results = {
        m.get("tool_call_id"): m.get("content", "") for m in messages if m.get("role") == "tool"
    }
    rows = iter(calls)
    asked = _elicited(trial)
    for message in messages:
        role = message.get("role")
        if role == "tool":
            continue
        content = message.get("content") or ""
        if role == "assistant" and message.get("undecoded"):
            found.append(Entry("undecoded", text=content))
            continue
        if content or role != "assistant":
            found.append(Entry(role if role in ("system", "user") else "assistant", text=content))
        for call in message.get("tool_calls") or []:
            # The farm's own calls (a continued turn's expected calls) have no tool_call row.
            row = None if message.get("farm") else next(rows, None)
            result = results.get(call.get("id"))
            found.append(
                Entry(
                    "call",
                    text=_called(str(call.get("name")), row),
                    arguments=_dumps(call.get("arguments")),
                    result=result,
                    cut=bool(result and CUT_NOTICE.search(result)),
                    ok=True if row is None else bool(row.ok),
                    error=None if row is None else row.error,
                    latency_s=None if row is None else row.latency_s,
                    index=None if row is None else row.idx,
                    server=None if row is None else row.server,
                )
            )
            if row is not None:
                found += asked.pop(row.idx, [])
    return found + [entry for rest in asked.values() for entry in rest]


def _called(shown: str, row: Any) -> str:
    """The tool a call reached, and the name the model wrote where a tool-list level showed it
    under another (docs/robustness.md): reports name the real tool."""
    real = getattr(row, "tool", None) if row is not None and row.server is not None else None
    return shown if real is None or real == shown else f"{real} (shown to the model as {shown})"


@dataclass
class StepLine:
    """One expected step of the scenario, with the calls that met it (or, for a trial graded
    before steps were kept, the calls of its tool)."""

    number: int
    label: str
    params: str
    calls: list[str] = field(default_factory=list)
    """Stored verdict: the calls that met the step (`#i`, the one that did it marked `did`);
    otherwise the model's calls of this step's tool: `#i ok` / `#i error`."""
    named: bool = False
    """The grader's verdict names this step (the one that failed)."""
    problem: str = ""
    """Why no call did the step, as the grader judged it (stored verdicts only)."""
    turn: int | None = None
    """In a conversation: the 1-based turn the step belongs to."""


@dataclass
class Verdict:
    """What the grader decided, and the scenario it decided it against."""

    outcome: str
    detail: str
    steps: list[StepLine]
    note: str = ""
    """Why the steps are missing, when they are."""


def verdict(trial: Any, calls: list[Any]) -> Verdict:
    """The grader's outcome and detail, with each expected step (at the scenario version the
    trial ran) and the call that did it or why none did, as the grader stored them (without
    the steps' parameters when the scenario is not in this checkout). A trial graded before
    that was kept shows each step beside the calls of its tool, the step the detail names
    marked."""
    detail = trial.detail or ""
    outcome = trial.outcome or trial.status
    try:
        scenario = _scenario(trial)
    except (FarmError, ValueError, KeyError) as exc:
        # The stored verdicts need no scenario; only the steps' parameters come from it.
        kept = _stored_steps(trial, None)
        if kept:
            return Verdict(outcome, detail, kept, note=f"the steps' parameters not shown: {exc}")
        return Verdict(outcome, detail, [], note=f"expected steps not shown: {exc}")
    stored = _stored_steps(trial, scenario)
    if stored is not None:
        note = "" if stored else "no step expects a tool call"
        return Verdict(outcome, detail, stored, note=note)
    expect = scenario.expect
    if scenario.routes:
        # A routed scenario: the route the trial took, or was judged by, holds the steps.
        route = next((r for r in scenario.routes if r.name == trial.route), None)
        if route is None:
            return Verdict(outcome, detail, [], note="the trial was judged by no route")
        expect = route.expect
    named = _named_step(detail, [set(step.names) for step in expect])
    steps = []
    for number, step in enumerate(expect):
        tools = set(step.names)
        steps.append(
            StepLine(
                number,
                step.label,
                _params(step),
                [f"#{c.idx} {'ok' if c.ok else 'error'}" for c in calls if c.tool in tools],
                named=number == named,
            )
        )
    note = "" if steps else "the scenario expects no tool call"
    return Verdict(outcome, detail, steps, note=note)


def _stored_steps(trial: Any, scenario: Any | None) -> list[StepLine] | None:
    """The step verdicts the grader stored (a one-prompt trial's, or each turn's); None when
    the trial has none, as trials graded before they were kept. Without the scenario (not in
    this checkout) the steps come without their parameters."""
    turns = _loads(getattr(trial, "turns_json", None), [])
    kept_by_turn = any("steps" in t for t in turns)
    if scenario.turns if scenario is not None else kept_by_turn:
        if not kept_by_turn:
            return None
        return [
            _stored_line(v, _turn_step(scenario, t["index"], t.get("route"), v["step"]), t)
            for t in turns
            for v in t.get("steps", [])
        ]
    found = _loads(getattr(trial, "steps_json", None), [])
    if not found:
        return None
    if scenario is None:
        return [_stored_line(v, None, None) for v in found]
    ways = dict(scenario.ways())
    way = ways.get(trial.route, scenario.ways()[0][1])
    return [_stored_line(v, _step_at(way.expect, v["step"]), None) for v in found]


def _turn_step(scenario: Any | None, index: int, route: str | None, step: int) -> Any:
    if scenario is None or index >= len(scenario.turns):
        return None
    ways = dict(scenario.turn_scenario(index).ways())
    way = ways.get(route, next(iter(ways.values())))
    return _step_at(way.expect, step)


def _step_at(expect: list[Any], step: int) -> Any:
    return expect[step] if 0 <= step < len(expect) else None


def _stored_line(found: dict[str, Any], step: Any, turn: dict[str, Any] | None) -> StepLine:
    did = found.get("call")
    calls = [f"#{i}{' did' if i == did else ''}" for i in found.get("met_by", [])]
    return StepLine(
        number=found["step"],
        label=found.get("label", ""),
        params=_params(step) if step is not None else "",
        calls=calls,
        named=did is None,
        problem=found.get("problem", ""),
        turn=None if turn is None else turn["index"] + 1,
    )


def _params(step: Any) -> str:
    return _dumps(step.model_dump(mode="json", exclude_defaults=True).get("params", {}))


def _named_step(detail: str, tools: list[set[str]]) -> int | None:
    """The step the grader's detail blames: the one it names by number, else the first step
    of the tool whose call it quotes."""
    if found := STEP_NAMED.search(detail):
        return int(found.group(1))
    if found := TOOL_NAMED.match(detail):
        return next((i for i, names in enumerate(tools) if found.group(1) in names), None)
    return None


def _scenario(trial: Any) -> Any:
    from mcp_farm.scenarios.catalog import find_scenario

    payload = _loads(trial.payload_json, {})
    ref = payload.get("scenario") or {}
    if not ref.get("suite"):
        raise ValueError("the trial's payload names no suite")
    return find_scenario(ref["suite"], trial.scenario_id, trial.scenario_version)


def pins(trial: Any) -> dict[str, Any]:
    """The trial's provenance: versions, commit, host, and the model's pins."""
    found = _loads(trial.provenance_json, {})
    return found if isinstance(found, dict) else {}


def selection_lines(trial: Any) -> list[str]:
    """Under a prompt config's `select:` (docs/robustness.md), one plain line per user message
    saying how much of the tools it called for the selection held (and, where the trial
    recorded each selection, whether a score tie decided it and its time), and for a failed
    trial whose failure it was, as the scorecard's selection table counts it: the selector's
    when some selection lacked such a tool, the model's when every selection held them. Empty
    for a trial without selection."""
    found = pins(trial)
    recall = found.get("selection_recall")
    if not isinstance(recall, list):
        return []
    turns = found.get("selections")
    turns = turns if isinstance(turns, list) and len(turns) == len(recall) else []
    lines = [
        f"user message {i}: "
        + ("called for no tool" if r is None else f"the selection held {r:.0%} of its tools")
        + (_turn_note(turns[i - 1]) if turns else "")
        for i, r in enumerate(recall, 1)
    ]
    if getattr(trial, "outcome", None) not in (None, "pass", "infra_error"):
        missed = any(isinstance(r, int | float) and r < 1 for r in recall)
        lines.append(
            "failed: the selector missed a tool it was called for"
            if missed
            else "failed: the model's failure, with the tools shown"
        )
    return lines


def _turn_note(turn: Any) -> str:
    """What a recorded selection adds to its line: whether a tie decided it, and its time."""
    if not isinstance(turn, dict):
        return ""
    tie = "; a score tie decided it (broken by the seed)" if turn.get("tied") else ""
    seconds = turn.get("seconds")
    took = f"; {seconds:.3g} s" if isinstance(seconds, int | float) else ""
    return tie + took


def user_lines(trial: Any) -> list[str]:
    """What a trial with a simulated user recorded of the user, one plain line each (the
    user model's words included, so a page or a terminal escapes them): who played it, how
    the conversation ended, what it cost, whose fault a failure was, and each user error.
    Empty for a trial without a simulated user, or a record that no longer reads."""
    raw = getattr(trial, "user_sim_json", "") or ""
    if not raw:
        return []
    try:
        user = UserSimRecord.model_validate_json(raw)
    except ValueError:
        return ["the simulated user's record does not read in this version of the farm"]
    lines = [
        f"user: {user.identity.pool_key}, seed {user.identity.seed}",
        f"messages {user.messages} ({user.cached} from the cache), ended by {user.ended}, "
        f"{user.tokens.prompt} + {user.tokens.completion} tokens, {user.seconds:.1f} s",
        f"whose fault: {getattr(trial, 'failure_source', None) or 'not recorded'}",
    ]
    lines += [f"user error, {error.describe()}: {error.said}" for error in user.errors]
    return lines


def state_summary(trial: Any) -> tuple[str, list[list[str]]]:
    """A trial's state probes (docs/state.md): one plain line saying what decided the outcome
    and how state and calls compared, and one row per probe (when it ran, what it looked at,
    expected, found, its verdict), all plain text for the page or terminal to escape. Empty
    for a trial without probes, or a record that no longer reads."""
    raw = getattr(trial, "state_json", "") or ""
    if not raw:
        return "", []
    try:
        state = StateVerdict.model_validate_json(raw)
    except ValueError:
        return "the state record does not read in this version of the farm", []
    line = (
        f"graded by {state.grade_by}; state {'passed' if state.passed else 'failed'}; "
        f"calls alone: {state.calls_outcome}"
    )
    line += "; other path (state right, calls not)" if state.other_path else ""
    line += f"; set back after turns {_turns(state.restored)}" if state.restored else ""
    if state.diverged:
        whose = {"model": "the model's calls stayed", "farm": "set back and redone, still off"}
        shown = [
            f"{i + 1} ({whose[state.diverged_by[i]]})" if i in state.diverged_by else str(i + 1)
            for i in state.diverged
        ]
        line += f"; started diverged: turns {', '.join(shown)}"
    rows = [
        [
            "end" if p.turn is None else f"after turn {p.turn + 1}",
            p.label,
            p.expected,
            p.found if len(p.found) <= 2000 else p.found[:2000] + "…",
            "fits" if p.passed else (p.problem or ""),
        ]
        for p in state.probes
    ]
    return line, rows


def _turns(indexes: list[int]) -> str:
    return ", ".join(str(i + 1) for i in indexes)
