"""Whether an agent target's command can start on this machine, in the words a worker's
preflight and an embedded run's share (docs/agents.md, "Preflight")."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from mcp_farm.schema.placeholders import PLACEHOLDER, fill_placeholders
from mcp_farm.schema.specs.models import ModelTarget

ROOT = Path(__file__).resolve().parents[1]
"""The checkout's root, as `{root}` is filled in when an agent runs."""


def known_values() -> dict[str, str]:
    """The agent placeholders no trial is needed for: this interpreter and the checkout."""
    return {"python": sys.executable, "root": str(ROOT)}


def missing_command(
    target: ModelTarget, environ: Mapping[str, str], place: str = "this node"
) -> str | None:
    """Why the agent's command cannot start on `place`, in words; None when it can, or when
    its first word holds a placeholder only a trial fills in (`{folder}`)."""
    assert target.agent is not None
    program = fill_placeholders(target.agent.command[0], known_values())
    if PLACEHOLDER.search(program):
        return None
    if os.sep not in program:
        path = target.agent.env.get("PATH", environ.get("PATH", os.defpath))
        return None if shutil.which(program, path=path) else f"is not on {place}'s PATH ({path})"
    where = Path(program)
    if not where.is_absolute():
        if target.agent.cwd is None:
            return "is a relative path, and the agent runs in the trial's own folder: give it whole"
        cwd = fill_placeholders(target.agent.cwd, known_values())
        if PLACEHOLDER.search(cwd):
            return None
        where = Path(cwd) / where
    if not where.is_file():
        return f"does not exist ({where})"
    if not os.access(where, os.X_OK):
        return f"is not executable ({where})"
    return None


def command_problem(
    target: ModelTarget, environ: Mapping[str, str], place: str, context: str = ""
) -> str | None:
    """`agent target 'id' (context) runs 'cmd', which …` when its command cannot start on
    `place`; None when it can."""
    assert target.agent is not None
    why = missing_command(target, environ, place)
    if why is None:
        return None
    about = f" ({context})" if context else ""
    return f"agent target {target.id!r}{about} runs {target.agent.command[0]!r}, which {why}"


def refusal(problems: Sequence[str], place: str, otherwise: str) -> str:
    """The error for `problems` (from `command_problem`), saying what to do: install the
    command on `place`, fix the sweep file, or `otherwise`."""
    return (
        "; ".join(problems) + f". Install the command on {place} (or fix `agent.command` in "
        f"the sweep file), or {otherwise}"
    )
