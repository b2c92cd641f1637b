"""The user's reminders, kept in memory only, as many to-do servers keep them.

Nothing is on disk, so no sandbox can bring the list back: the list is empty when the process
starts, and `clear_reminders` empties it again and restarts the numbering. The farm makes that
call before every trial (the definition's `reset:`), so one process serves trial after trial
and each starts from an empty list and whatever its scenario's `setup:` adds.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.types import ToolAnnotations

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    serve,
)
from mcp_farm.scenarios.servers.calendar import parse_day

READ_ONLY = ToolAnnotations(read_only_hint=True)
DESTRUCTIVE = ToolAnnotations(destructive_hint=True)
"""A tool that deletes or overwrites what it cannot bring back (`confirm_destructive`)."""


@dataclass
class Reminder:
    id: str
    text: str
    due: str | None
    done: bool = False

    def line(self) -> str:
        due = f" (due {self.due})" if self.due else ""
        return f"{self.id}  [{'x' if self.done else ' '}] {self.text}{due}"


class Reminders:
    """The list and the next number, in this process only."""

    def __init__(self) -> None:
        self.items: list[Reminder] = []
        self.next = 1

    def find(self, reminder_id: str) -> Reminder:
        for item in self.items:
            if item.id == reminder_id.strip().lower():
                return item
        known = ", ".join(i.id for i in self.items) or "none"
        raise ToolError(f"no reminder {reminder_id!r} (known: {known})")


def build() -> MCPServer:
    server = MCPServer("reminders")
    kept = Reminders()

    @server.tool()
    def add_reminder(text: str, due: str | None = None) -> str:
        """Add a reminder, optionally due on a day (YYYY-MM-DD); returns its id."""
        if not text.strip():
            raise ToolError("a reminder needs some text")
        if due is not None:
            due = parse_day(due, "due").isoformat()
        item = Reminder(f"r{kept.next}", text.strip(), due)
        kept.next += 1
        kept.items.append(item)
        return f"added {item.line()}"

    @server.tool(annotations=READ_ONLY)
    def list_reminders(include_done: bool = False) -> str:
        """List the open reminders (and the done ones with include_done), one per line:
        id, [x] when done, text, due day."""
        shown = [i for i in kept.items if include_done or not i.done]
        return "\n".join(i.line() for i in shown) or "no reminders"

    @server.tool()
    def complete_reminder(reminder_id: str) -> str:
        """Mark a reminder done, by the id list_reminders shows (r1, r2, …)."""
        item = kept.find(reminder_id)
        item.done = True
        return f"done: {item.line()}"

    @server.tool(annotations=DESTRUCTIVE)
    def clear_reminders() -> str:
        """Delete every reminder, done or not, and start numbering again at r1."""
        kept.items.clear()
        kept.next = 1
        return "all reminders deleted"

    return server


if __name__ == "__main__":
    serve(lambda _a: build())
