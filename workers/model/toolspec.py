"""Tools as the model sees them, and the replies a model gives back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp_farm.schema import StopReason, TokenCounts


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool, under the name shown to the model."""

    shown_name: str
    server: str
    tool: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool = False
    """The server marked the tool read-only (MCP `readOnlyHint`): calling it changes nothing."""
    destructive: bool = False
    """The server marked the tool destructive (MCP `destructiveHint: true`)."""
    meta: dict[str, str] = field(default_factory=dict, compare=False)
    """The tool's `farm/…` metadata (a distractor's shown name, origin, family)."""


@dataclass(frozen=True)
class ParsedCall:
    """A tool call the model made, already decoded into a name and an argument object."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class ModelReply:
    """What one model turn produced."""

    text: str = ""
    calls: list[ParsedCall] = field(default_factory=list)
    tokens: TokenCounts = field(default_factory=TokenCounts)
    format_error: str | None = None
    """Set when the reply could not be decoded into calls or an answer."""
    first_token_s: float | None = None
    stop: StopReason | None = None
    """Set by an adapter that ends the session instead of replying: a replay asked for a turn
    its recording does not have ends as the recording did (`text` then says why)."""


@dataclass(frozen=True)
class Sampling:
    """Sampling for one schema-constrained completion (a judge's verdict)."""

    temperature: float
    max_tokens: int
    seed: int


@dataclass
class JsonReply:
    """The raw text of a schema-constrained completion and what it cost."""

    text: str
    tokens: TokenCounts = field(default_factory=TokenCounts)
