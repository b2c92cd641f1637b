"""The distractors a trial makes of its own servers' tools (near-misses and twins), and the
record of any distractor. Kept free of the MCP SDK: a worker imports it (workers/mcp/toollist.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ADD_TOOL = "farm_add_distractors"
"""The server's control tool (for the farm only): serve the near-misses and twins a trial made
of its own servers' tools at run time, third-party servers' included."""

NEAR = {
    "archive": (
        "It looks only at archived items.",
        "Only what was moved to the archive is covered.",
        "Items still in use are out of its reach; archived ones are not.",
    ),
    "drafts": (
        "It covers unsaved drafts, not what was saved.",
        "Drafts only: anything already saved is left alone.",
        "Meant for work in progress that was never saved.",
    ),
    "history": (
        "It reads the earlier versions kept in the history.",
        "Past versions only, as the history recorded them.",
        "Acts on the recorded history rather than on what is current.",
    ),
    "shared": (
        "Limited to what others have shared with you.",
        "Only items another user shared are included.",
        "Your own items are skipped; shared ones are used.",
    ),
    "metadata": (
        "It deals with the metadata, never the contents.",
        "Descriptive fields only (owner, dates, labels); contents are not touched.",
        "Works at the level of properties such as size and owner, not of contents.",
    ),
}
"""What a near-miss works on instead (the same verb, an overlapping object), and sentences
that say so: several wordings each, so no phrase marks near-misses as a family."""

NEAR_SUFFIXES = tuple(NEAR)
"""The objects in turn: near-misses of a listing take them round, so none is used much more
than another."""


@dataclass(frozen=True)
class Distractor:
    """One tool the server lists: its real (unique) name and what a trial may show of it."""

    name: str
    """The name the server lists and is called by, e.g. `mirror.search.search_documents`."""
    shown: str
    """The bare name a client would show (`search_documents`)."""
    origin: str
    """The server it seems to belong to: the one it copies, or a generated tool's domain."""
    family: str
    """`mirror`, `near_miss` or `generated`."""
    of: str
    """For a mirror or near-miss, the bundled tool it copies; empty for a generated one."""
    description: str
    input_schema: dict[str, Any]


def _first_sentence(text: str) -> str:
    """The first sentence, its line breaks joined (a docstring's sentence may span lines)."""
    flat = " ".join(text.split())
    cut = flat.find(". ")
    if cut >= 0:
        return flat[: cut + 1]
    return flat if not flat or flat.endswith((".", "!", "?")) else f"{flat}."


def near_miss(
    server: str, name: str, description: str, schema: dict[str, Any], suffix: str
) -> Distractor:
    """A tool with the verb and parameters of `name` but another object (`suffix`, one of
    NEAR), e.g. `read_file` → `read_file_history`."""
    shown = f"{name}_{suffix}"
    said = _first_sentence(description) or f"Runs {name.replace('_', ' ')}."
    return Distractor(
        name=f"near.{server}.{shown}",
        shown=shown,
        origin=server,
        family="near_miss",
        of=name,
        description=f"{said} {_pick(NEAR[suffix], name)}",
        input_schema=schema,
    )


def mirror(server: str, name: str, description: str, schema: dict[str, Any]) -> Distractor:
    """A twin of a listed tool: its name, description and schema, served here."""
    return Distractor(
        name=f"mirror.{server}.{name}",
        shown=name,
        origin=server,
        family="mirror",
        of=name,
        description=description,
        input_schema=schema,
    )


def _pick(wordings: tuple[str, ...], name: str) -> str:
    """One of `wordings`, fixed by the tool's name (the same in every run and process)."""
    return wordings[sum(name.encode("utf-8")) % len(wordings)]
