"""A small office's shared files and meeting rooms, kept in memory, whose tools ask the user
through MCP elicitation (docs/conversations.md, "Servers that ask the user").

`delete_file` asks "Delete <name>? This cannot be undone." (a boolean `confirm`) before it
deletes anything; `book_room` asks for the number of people when the call does not give it.
On decline or cancel the tool returns a plain result saying so, and nothing changes. The farm
calls `reset_office` before every trial (the definition's `reset:`); its hidden
`farm_snapshot` and `farm_restore` tools (docs/state.md) are for the farm only.

The questions are the SDK's resolvers (`Resolve`, `Elicit`), which ask the way the session
speaks: `elicitation/create` during the call on a handshake session, the `input_required`
round trip (the call answered with the question, then sent again with the reply) at 2026-07-28.
"""

# No `from __future__ import annotations`: the SDK reads `Resolve(...)` from the tools'
# annotations, which would then be strings naming resolvers local to `build`.
from dataclasses import dataclass, field
from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from mcp_farm.scenarios.servers._sdk import (
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
    ToolError,
    add_control,
    serve,
)

READ_ONLY = ToolAnnotations(read_only_hint=True)
DESTRUCTIVE = ToolAnnotations(destructive_hint=True)
FILES = {
    "budget-2026.xlsx": "Finance: the 2026 budget, approved in January.",
    "old-logo.png": "The logo used until 2024.",
    "offsite-plan.md": "The spring offsite: Lisbon, 14-16 May.",
}
ROOMS = {"Harbor": 12, "Attic": 4}
"""Room name: how many people it seats."""


class Confirm(BaseModel):
    confirm: bool = Field(description="Yes, delete it")


class Headcount(BaseModel):
    people: int = Field(description="How many people will attend")


@dataclass
class State:
    files: dict[str, str] = field(default_factory=lambda: dict(FILES))
    bookings: list[str] = field(default_factory=list)


def build() -> MCPServer:
    server = MCPServer("office")
    kept = State()

    @server.tool(annotations=READ_ONLY)
    def list_files() -> str:
        """The shared drive's files, one per line."""
        return "\n".join(sorted(kept.files)) or "(no files)"

    async def confirmation(name: str) -> Elicit[Confirm]:
        if name not in kept.files:
            raise ToolError(f"no file {name!r} (files: {', '.join(sorted(kept.files))})")
        return Elicit(f"Delete {name}? This cannot be undone.", Confirm)

    @server.tool(annotations=DESTRUCTIVE)
    async def delete_file(
        name: str, asked: Annotated[ElicitationResult[Confirm], Resolve(confirmation)]
    ) -> str:
        """Delete a file from the shared drive, after the user confirms (it cannot be undone)."""
        if asked.action != "accept" or not asked.data.confirm:
            return f"The user declined: {name} was not deleted."
        del kept.files[name]
        return f"Deleted {name}."

    @server.tool(annotations=READ_ONLY)
    def list_rooms() -> str:
        """The meeting rooms and how many people each seats, with today's bookings."""
        rooms = [f"{room}: seats {seats}" for room, seats in ROOMS.items()]
        return "\n".join([*rooms, "Bookings: " + ("; ".join(kept.bookings) or "none")])

    async def headcount(room: str, date: str, people: int | None) -> Elicit[Headcount] | None:
        """Ask for the number of people only when the call left it out (None: nothing asked)."""
        if room not in ROOMS:
            raise ToolError(f"no room {room!r} (rooms: {', '.join(ROOMS)})")
        if people is not None:
            return None
        return Elicit(f"How many people will attend in {room} on {date}?", Headcount)

    @server.tool()
    async def book_room(
        room: str,
        date: str,
        asked: Annotated[ElicitationResult[Headcount], Resolve(headcount)],
        people: int | None = None,
    ) -> str:
        """Book a meeting room for a date (YYYY-MM-DD); asks the user how many people will
        attend when `people` is not given."""
        if people is None:
            if asked.action != "accept":
                return f"The user did not give the number of people: {room} was not booked."
            people = asked.data.people
        if people > ROOMS[room]:
            raise ToolError(f"{room} seats {ROOMS[room]}, not {people}")
        kept.bookings.append(f"{room} on {date} for {people}")
        return f"Booked {room} on {date} for {people} people."

    @server.tool()
    def reset_office() -> str:
        """Put the drive and the bookings back as they were."""
        fresh = State()
        kept.files, kept.bookings = fresh.files, fresh.bookings
        return "the office is reset"

    def snapshot() -> dict[str, object]:
        return {"files": dict(sorted(kept.files.items())), "bookings": list(kept.bookings)}

    def restore(state: dict[str, object]) -> None:
        files, bookings = state.get("files"), state.get("bookings")
        if not isinstance(files, dict) or not isinstance(bookings, list):
            raise ToolError("a snapshot holds `files` and `bookings`")
        kept.files, kept.bookings = dict(files), list(bookings)

    add_control(server, snapshot, restore)
    return server


if __name__ == "__main__":
    serve(lambda _a: build())
