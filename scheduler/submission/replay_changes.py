"""What a replay changed against its recording: per trial, its calls' results (a diff of the
text, or of the JSON), calls that now fail or now succeed, its turns (replay_turns.py), state
probes that now fail, now pass or find another value (replay_state.py), and its outcome; and
the tools its servers list now.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from mcp_farm.scenarios import find_scenario, servers_for
from mcp_farm.scheduler.submission.expand import Plan
from mcp_farm.scheduler.submission.queries import RecordedCall
from mcp_farm.scheduler.submission.replay import Key, key_of, spec_key
from mcp_farm.scheduler.submission.replay_state import ProbeChange, probe_changes
from mcp_farm.scheduler.submission.replay_turns import (
    TurnChange,
    farm_calls,
    stored_turns,
    turn_changes,
    turn_of_calls,
)
from mcp_farm.schema import IgnoreRules, Scenario

DIFF_LINES = 12
"""Lines of a result's diff shown per changed call."""

LINE_CHARS = 160
"""Characters of one diff line shown: a longer line is shown around its first difference."""

Rules = dict[str, IgnoreRules]
"""A trial's servers' ignore rules, by server name."""


ChangeKind = Literal[
    "result changed",
    "result changed past the stored text",
    "structured content changed",
    "now fails",
    "now succeeds",
    "not made",
    "new",
]
"""What changed about one call between the recording and the replay."""


@dataclass
class CallChange:
    index: int
    tool: str
    kind: ChangeKind
    detail: str = ""
    """The error of a call that now fails; what a change past the stored text means."""
    diff: list[str] = field(default_factory=list)
    """A unified diff of the change (text, or indented JSON), at most DIFF_LINES."""
    turn: int | None = None
    """In a conversation, the call's user turn (1-based); None in a one-prompt trial."""
    farm: bool = False
    """A call the farm made for a continued turn (`index` counts those of its turn)."""

    @property
    def what(self) -> str:
        return f"{self.kind}: {self.detail}" if self.detail else self.kind

    @property
    def where(self) -> str:
        """How a report names the call: `call 2`, `turn 2 call 1`, `turn 1 farm call 1`."""
        call = f"{'farm call' if self.farm else 'call'} {self.index + 1}"
        return call if self.turn is None else f"turn {self.turn} {call}"


@dataclass
class TrialChange:
    key: Key
    before: str
    after: str
    calls: list[CallChange] = field(default_factory=list)
    turns: list[TurnChange] = field(default_factory=list)
    """In a conversation, the turns whose own verdict changed."""
    probes: list[ProbeChange] = field(default_factory=list)
    """The state probes whose verdict or value found changed (replay_state.py)."""

    @property
    def outcome_changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class StoredResult:
    """One call's result as a sweep stored it, whole where it could be."""

    text: str
    """The whole text where the call row holds it, else the transcript's tool message."""
    digest: str
    """sha256 of the whole text; empty when no server answered."""
    whole: dict[str, Any] | None
    """The call row's `whole_json`; None for a row recorded before schema version 11."""

    @property
    def complete(self) -> bool:
        """Whether `text` is the whole text (its digest says so), or nothing tells otherwise."""
        if not self.digest:
            return True
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest() == self.digest

    @property
    def structured_digest(self) -> str | None:
        return None if self.whole is None else self.whole.get("structured_digest")


def stored_result(call: RecordedCall | None, message: str) -> StoredResult:
    """A call's result from its row (`call`, None when the row is missing) and its tool message."""
    if call is None:
        return StoredResult(message, "", None)
    whole = json.loads(call.whole_json) if call.whole_json else None
    text = whole["text"] if whole and "text" in whole else message
    return StoredResult(text, call.digest, whole)


def result_changes(
    index: int, tool: str, was: StoredResult, now: StoredResult, rules: IgnoreRules
) -> list[CallChange]:
    """How a call's result differs, the ignore rules applied: its text, with a diff; a change
    the digests show past the stored text; or, when the text is the same, its structured
    content, with a diff (servers often repeat the text there: one diff says it)."""
    found = []
    was_text, now_text = comparable(was, now)
    before, after = rules.text_lines(was_text), rules.text_lines(now_text)
    if before != after:
        found.append(CallChange(index, tool, "result changed", diff=line_diff(before, after)))
    elif (
        was.digest != now.digest
        and was.digest
        and now.digest
        and not (was.complete and now.complete)
    ):
        note = "only the first part of it was stored; its digest differs" + (
            ", and the ignore rules could not be applied to the rest" if rules else ""
        )
        found.append(CallChange(index, tool, "result changed past the stored text", note))
    if found or was.whole is None or now.whole is None:
        return found  # a changed text is shown; its structured twin is not diffed again
    if was.structured_digest == now.structured_digest:
        return found
    was_s, now_s = (r.whole.get("structured") if r.whole else None for r in (was, now))
    if was.whole.get("structured_cut") or now.whole.get("structured_cut"):
        found.append(
            CallChange(
                index, tool, "structured content changed", "too large to show; digests differ"
            )
        )
        return found
    before, after = (
        [] if value is None else _json_lines(rules.applied(value)) for value in (was_s, now_s)
    )
    if before != after:
        found.append(
            CallChange(index, tool, "structured content changed", diff=line_diff(before, after))
        )
    return found


CUT_NOTICE = re.compile(r"\n\[result cut: \d+ more characters not shown\]\Z")
"""The line a cut result ends with in a transcript (workers/mcp/connections.py `shown_text`)."""


def comparable(was: StoredResult, now: StoredResult) -> tuple[str, str]:
    """The two texts as far as both are known: a text known only in part (a call stored before
    whole results were kept) is compared with the same length of the other."""
    if was.complete and now.complete:
        return was.text, now.text
    was_text = was.text if was.complete else CUT_NOTICE.sub("", was.text)
    now_text = now.text if now.complete else CUT_NOTICE.sub("", now.text)
    known = min(len(t) for t, r in ((was_text, was), (now_text, now)) if not r.complete)
    return was_text[:known], now_text[:known]


def _json_lines(value: Any) -> list[str]:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def line_diff(before: list[str], after: list[str]) -> list[str]:
    """A unified diff of two texts' lines, long lines shown around where they differ; at most
    DIFF_LINES, then how many more."""
    lines = _clipped(list(difflib.unified_diff(before, after, "recorded", "now", n=1, lineterm="")))
    return lines[:DIFF_LINES] + (
        [f"… {len(lines) - DIFF_LINES} more lines"] if len(lines) > DIFF_LINES else []
    )


def _clipped(lines: list[str]) -> list[str]:
    """Diff lines longer than LINE_CHARS cut to the part around where a removed line and the
    added line in its place first differ (a change at the end of a 5,000-character field)."""
    out, i = lines[:2], 2  # the `--- recorded` and `+++ now` headers
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].startswith("-"):
            j += 1
        k = j
        while k < len(lines) and lines[k].startswith("+"):
            k += 1
        if j == i and k == j:
            out.append(_clip(lines[i], ""))
            i += 1
            continue
        minus, plus = lines[i:j], lines[j:k]
        out += [_clip(m, plus[n] if n < len(plus) else "") for n, m in enumerate(minus)]
        out += [_clip(p, minus[n] if n < len(minus) else "") for n, p in enumerate(plus)]
        i = k
    return out


def _clip(line: str, other: str) -> str:
    if len(line) <= LINE_CHARS:
        return line
    text, against = line[1:], other[1:]
    same = next(
        (n for n, (x, y) in enumerate(zip(text, against, strict=False)) if x != y),
        min(len(text), len(against)),
    )
    start = max(0, same - LINE_CHARS // 4)
    part = text[start : start + LINE_CHARS]
    return line[0] + ("…" if start else "") + part + ("…" if start + LINE_CHARS < len(text) else "")


def result_diff(before: str, after: str) -> list[str]:
    """A unified diff of two results' texts, JSON compared as indented JSON."""
    none = IgnoreRules()
    return line_diff(none.text_lines(before), none.text_lines(after))


def _tool_results(transcript_json: str) -> list[str]:
    """The results of the trial's own calls as the model was shown them; the farm's calls of a
    continued turn (`farm: true`) are kept with their turn instead."""
    return [
        m.get("content", "")
        for m in json.loads(transcript_json)
        if m.get("role") == "tool" and not m.get("farm")
    ]


def call_changes(
    was_calls: list[RecordedCall],
    now_calls: list[RecordedCall],
    was_messages: list[str],
    now_messages: list[str],
    rules: Rules,
) -> list[CallChange]:
    """Per call, in order: calls made or no longer made, calls that now fail or now succeed,
    and results that differ (the server's ignore rules applied)."""
    found = []
    for i in range(max(len(was_calls), len(now_calls))):
        if i >= len(now_calls):
            found.append(CallChange(i, was_calls[i].tool, "not made"))
            continue
        if i >= len(was_calls):
            found.append(CallChange(i, now_calls[i].tool, "new"))
            continue
        was, now = was_calls[i], now_calls[i]
        if was.ok and not now.ok:
            found.append(CallChange(i, was.tool, "now fails", now.error[:200]))
        elif now.ok and not was.ok:
            found.append(CallChange(i, was.tool, "now succeeds"))
        if i < len(was_messages) and i < len(now_messages):
            found += result_changes(
                i,
                was.tool,
                stored_result(was, was_messages[i]),
                stored_result(now, now_messages[i]),
                rules.get(now.server or was.server or "", IgnoreRules()),
            )
    return found


def changes(
    source: list[Any],
    replayed: list[Any],
    source_calls: dict[str, list[RecordedCall]],
    replayed_calls: dict[str, list[RecordedCall]],
    rules: dict[Key, Rules] | None = None,
    scenarios: dict[Key, Scenario] | None = None,
) -> list[TrialChange]:
    """Every trial whose outcome, whose calls' results or whose state probes differ between the
    recording and the replay, in the recording's order; empty when the servers answered
    exactly as before. `rules`: per trial, its servers' ignore rules by server name (a probe's
    value found is compared under all of them: a probe does not record its server).
    `scenarios`: per trial, its scenario, whose probes' `at:` name the part of a value found
    that is compared (the whole value where it is not given)."""
    after = {key_of(row): row for row in replayed}
    found = []
    for row in source:
        key = key_of(row)
        new = after.get(key)
        if new is None:  # not recorded by the replay (cancelled, or still running)
            found.append(TrialChange(key, row.outcome or "", "not replayed"))
            continue
        calls = call_changes(
            source_calls.get(row.trial_id, []),
            replayed_calls.get(new.trial_id, []),
            _tool_results(row.transcript_json),
            _tool_results(new.transcript_json),
            (rules or {}).get(key, {}),
        )
        was_turns, now_turns = stored_turns(row), stored_turns(new)
        calls = conversation_calls(calls, was_turns, now_turns, (rules or {}).get(key, {}))
        turns = turn_changes(was_turns, now_turns)
        every_rule = IgnoreRules()
        for server_rules in (rules or {}).get(key, {}).values():
            every_rule = every_rule.joined(server_rules)
        probes = probe_changes(row, new, every_rule, line_diff, (scenarios or {}).get(key))
        if calls or turns or probes or row.outcome != new.outcome:
            was, now = row.outcome or "", new.outcome or ""
            found.append(TrialChange(key, was, now, calls, turns, probes))
    return found


def conversation_calls(
    calls: list[CallChange],
    was_turns: list[dict[str, Any]],
    now_turns: list[dict[str, Any]],
    rules: Rules,
) -> list[CallChange]:
    """A conversation's call changes with their turns, and the changes of the farm's own
    calls (a continued turn's expected calls), turn by turn; `calls` as they were for a
    one-prompt trial."""
    if not was_turns and not now_turns:
        return calls
    was_at, now_at = turn_of_calls(was_turns), turn_of_calls(now_turns)
    found = [replace(c, turn=was_at.get(c.index, now_at.get(c.index))) for c in calls]
    was_by, now_by = (
        {int(t.get("index", 0)): t for t in turns} for turns in (was_turns, now_turns)
    )
    for i in sorted(was_by.keys() | now_by.keys()):
        was_calls, was_shown = farm_calls(was_by.get(i, {}))
        now_calls, now_shown = farm_calls(now_by.get(i, {}))
        changed = call_changes(was_calls, now_calls, was_shown, now_shown, rules)
        found += [replace(c, turn=i + 1, farm=True) for c in changed]
    return found


@dataclass(frozen=True)
class ToolChange:
    server: str
    tool: str
    what: Literal["new", "gone", "description changed", "schema changed"]


def listed_tools(rows: list[Any]) -> dict[str, dict[str, str]]:
    """What the sweep's servers listed (TrialProvenance.server_tools), over all its trials."""
    found: dict[str, dict[str, str]] = {}
    for row in rows:
        stored = json.loads(row.provenance_json or "{}").get("server_tools") or {}
        for server, tools in stored.items():
            found.setdefault(server, {}).update(tools)
    return found


def tool_changes(
    before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]
) -> list[ToolChange]:
    """Tools listed or no longer listed, and tools whose description or schemas changed, on
    every server both sweeps attached."""
    found = []
    for server in sorted(before.keys() & after.keys()):
        was, now = before[server], after[server]
        for tool in sorted(was.keys() | now.keys()):
            if tool not in now:
                found.append(ToolChange(server, tool, "gone"))
            elif tool not in was:
                found.append(ToolChange(server, tool, "new"))
            else:
                (was_d, was_s), (now_d, now_s) = was[tool].split(), now[tool].split()
                if was_d != now_d:
                    found.append(ToolChange(server, tool, "description changed"))
                if was_s != now_s:
                    found.append(ToolChange(server, tool, "schema changed"))
    return found


def trial_scenarios(plan: Plan) -> dict[Key, Scenario]:
    """Per trial of a replay, its scenario as the suite writes it now (its probes' `at:`)."""
    return {
        spec_key(trial): find_scenario(
            trial.scenario.suite, trial.scenario.id, trial.scenario.version
        )
        for trial in plan.trials
    }


def ignore_rules(plan: Plan) -> dict[Key, Rules]:
    """Per trial of a replay, its servers' ignore rules (a suite's added to each server's),
    as the catalogue and the suite define them now."""
    by_suite: dict[str, Rules] = {}
    found: dict[Key, Rules] = {}
    for trial in plan.trials:
        suite = trial.scenario.suite
        if suite not in by_suite:
            servers = servers_for(suite)
            by_suite[suite] = {name: s.ignore for name, s in servers.items() if s.ignore}
        found[spec_key(trial)] = by_suite[suite]
    return found
