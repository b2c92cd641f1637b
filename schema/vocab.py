"""Closed vocabularies shared by every package."""

from __future__ import annotations

from typing import Literal, get_args

Tier = Literal["simple", "moderate", "complex"]

ToolMode = Literal["native", "json", "grammar"]
"""How tools reach the model: OpenAI `tools`, JSON-in-text, or grammar-constrained JSON."""

AdapterName = Literal["openai", "local", "scripted", "replay", "agent"]
"""How the farm reaches the system under test; `agent`: an MCP client of its own, run as a
command (docs/agents.md)."""

AgentConvention = Literal["oneshot", "jsonl"]
"""How an agent command gets the user's words: `oneshot`, one run per user message (as an
argument `{prompt}` or on stdin; the answer on stdout); `jsonl`, one run per trial, the farm
writing `{"user": …}` lines and the agent answering `{"assistant": …}` lines."""

ReplyClock = Literal["wall", "cpu"]
"""What a model's per-reply limit is measured on: the wall clock (a model behind an endpoint),
or the CPU time of the thread generating the reply (a model in the worker's own process)."""

Transport = Literal["stdio", "http"]

ServerStart = Literal["forked", "fresh", "url"]
"""How a server's process started for a trial: `forked` from the warm interpreter
(workers/mcp/launch/), `fresh` as a process of its own, `url` served at an address."""

McpProtocol = Literal["legacy", "2026-07-28"]
"""How the farm opens a server's MCP session: `legacy`, the `initialize` handshake (protocol
2025-11-25 and before); `2026-07-28`, the per-request protocol with no handshake, where a server
asks the user through the `input_required` round trip instead of `elicitation/create`."""

TrialStatus = Literal["pending", "running", "done", "cancelled"]

SweepStatus = Literal["active", "cancelled"]

Outcome = Literal[
    "harness_error",
    "infra_error",
    "context_overflow",
    "timeout",
    "format_error",
    "forbidden_call",
    "guessed",
    "no_tool_call",
    "wrong_tool",
    "wrong_params",
    "wrong_sequence",
    "tool_loop",
    "wrong_state",
    "output_mismatch",
    "pass",
]
"""Checked in this order; the first that applies is the trial's outcome. `context_overflow`: the
prompt (its tool list, or the transcript grown by results) left the reply less than its
`max_tokens` of the model's context, so the model was not asked: a graded failure of the
configuration (docs/robustness.md, "When the tool list does not fit"). `guessed`: in a
conversation's turn that must ask the user for a missing detail, a tool was called instead.
`forbidden_call` (before it: a forbidden call is the graver mistake): a call the scenario's `never:` names was made, or a destructive tool was
called before the user confirmed (`confirm_destructive`), or a tool was called again after the
user declined or cancelled its elicitation in the same turn. `wrong_state`: graded by state
(`grade_by: state` or `both`), a `state:` probe did not find what it expects (e.g. an effect
doubled) while the calls alone passed, or, by state alone, whatever the calls were."""

ElicitAction = Literal["accept", "decline", "cancel"]
"""How the user answers a server's elicitation request (MCP `ElicitResult.action`)."""

OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

UNGRADED: tuple[Outcome, ...] = ("harness_error", "infra_error")
"""Outcomes that say nothing about the model (a bug in the farm, a broken infrastructure): left
out of every rate, and shown on their own."""

StopReason = Literal[
    "answer",
    "turn_limit",
    "tool_loop",
    "time_limit",
    "model_time_limit",
    "context_overflow",
    "format_error",
    "infra_error",
    "harness_error",
]
"""Why the agent session ended."""

# The fixture servers' control tools (docs/state.md). Kept here, in a module with no imports
# of its own, because every fixture server process reads them at start-up.

CONTROL_META = "mcp-farm/control"
"""The `_meta` key a fixture server sets (true) on a tool only the farm may call: a snapshot
of its state, a restore, a server-side trigger. The farm never shows such a tool to a model."""

SNAPSHOT_TOOL = "farm_snapshot"
"""The control tool a fixture server answers with its state as a JSON document."""

RESTORE_TOOL = "farm_restore"
"""The control tool that puts a fixture server back to a document `farm_snapshot` gave."""
