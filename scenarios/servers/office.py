"""A small office's shared files and meeting rooms, kept in memory, whose tools ask the user
through MCP elicitation (docs/conversations.md, "Servers that ask the user").

`delete_file` asks "Delete <name>? This cannot be undone." (a boolean `confirm`) before it
deletes anything; `book_room` asks for the number of people when the call does not give it.
On decline or cancel the tool returns a plain result saying so, and nothing changes. The farm
calls `reset_office` before every trial (the definition's `reset:`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from mcp_farm.scenarios.servers._sdk import (
    Context,
    MCPServer,
    ToolError,
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

    @server.tool(annotations=DESTRUCTIVE)
    async def delete_file(name: str, ctx: Context) -> str:
        """Delete a file from the shared drive, after the user confirms (it cannot be undone)."""
        if name not in kept.files:
            raise ToolError(f"no file {name!r} (files: {', '.join(sorted(kept.files))})")
        asked = await ctx.elicit(f"Delete {name}? This cannot be undone.", Confirm)
        if asked.action != "accept" or not asked.data.confirm:
            return f"The user declined: {name} was not deleted."
        del kept.files[name]
        return f"Deleted {name}."

    @server.tool(annotations=READ_ONLY)
    def list_rooms() -> str:
        """The meeting rooms and how many people each seats, with today's bookings."""
        rooms = [f"{room}: seats {seats}" for room, seats in ROOMS.items()]
        return "\n".join([*rooms, "Bookings: " + ("; ".join(kept.bookings) or "none")])

    @server.tool()
    async def book_room(room: str, date: str, ctx: Context, people: int | None = None) -> str:
        """Book a meeting room for a date (YYYY-MM-DD); asks the user how many people will
        attend when `people` is not given."""
        if room not in ROOMS:
            raise ToolError(f"no room {room!r} (rooms: {', '.join(ROOMS)})")
        if people is None:
            asked = await ctx.elicit(f"How many people will attend in {room} on {date}?", Headcount)
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

    return server


if __name__ == "__main__":
    serve(lambda _a: build())
