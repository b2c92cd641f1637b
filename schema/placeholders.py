"""The placeholders a server definition may hold, and where the farm fills each one in.

The workers fill them in when they start a server (mcp_farm.workers.mcp.pool); `farm scenarios
validate` reports any other `{name}`, which would otherwise reach the server as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::([^{}]*))?\}")
"""`{name}` or `{name:argument}`: what reads as a placeholder. Other braces (a JSON argument's
`{"a": 1}`) are not placeholders and pass as written."""

ENV_PLACEHOLDER = re.compile(r"\{env:([^{}]*)\}")
"""`{env:VAR}` in a server definition: VAR from the worker's environment at start time."""

STARTED = frozenset({"python", "root", "sandbox", "attached"})
"""Filled in wherever a server is started: this interpreter, the checkout's root, the trial's
fresh sandbox, the trial's server names (comma-separated)."""

SHARED = frozenset({"port", "sandboxes"})
"""Filled in only in a `shared:` launch: the port the farm picks, and the folder every trial's
sandbox lies in (`{sandboxes}` in its command only)."""

FILLED_BY_FIELD: dict[str, frozenset[str]] = {
    "command": STARTED,
    "env": STARTED,
    "url": STARTED,
    "shared.command": STARTED | SHARED,
    "shared.url": STARTED | {"port"},
    "shared.headers": STARTED | {"port"},
}
"""The names filled in, by the field of a server definition that holds them (besides
`{env:VAR}`, filled in everywhere)."""


def fill_placeholders(text: str, values: Mapping[str, str]) -> str:
    """`text` with each `{name}` that `values` gives replaced, in one pass; any other
    placeholder (`{env:VAR}` among them) is left as written."""
    unknown = set(values) - STARTED - SHARED
    assert not unknown, f"not a placeholder the farm defines: {sorted(unknown)}"

    def value(match: re.Match[str]) -> str:
        if match.group(2) is not None:
            return match.group(0)
        return values.get(match.group(1), match.group(0))

    return PLACEHOLDER.sub(value, text)


def unknown_placeholders(text: str, field: str) -> list[str]:
    """The placeholders in `text` that the farm does not fill in where `field` (a key of
    FILLED_BY_FIELD) is used, as written."""
    known = FILLED_BY_FIELD[field]
    return [
        m.group(0)
        for m in PLACEHOLDER.finditer(text)
        if not (m.group(1) == "env" and m.group(2) is not None)
        and not (m.group(2) is None and m.group(1) in known)
    ]
