"""A team's task board whose tools depend on the workspace's plan, kept in memory.

The free plan offers `export_tasks_csv`; the pro plan takes it away and offers
`archive_task`, `assign_task` and `export_tasks` instead. `set_plan` is the workspace admin's
switch: it changes the tool list and sends `notifications/tools/list_changed` (at protocol
2026-07-28, an event on the client's `subscriptions/listen` stream), which is how a
conversation scenario's `event: tools_changed` happens (docs/conversations.md). The farm calls
`reset_workspace` before every trial (the definition's `reset:`). `farm_set_plan`,
`farm_snapshot` and `farm_restore` are hidden control tools, for the farm only (docs/state.md):
a trigger the model does not see, and the board as a document.

`add_task` answers in words and gives the new task's id in its structured content too, as
servers with an output schema do, so chained values can be read from `structuredContent`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from mcp_farm.scenarios.servers._sdk import (
    CONTROL,
    Context,
    MCPServer,
    ToolError,
    add_control,
    serve,
)

READ_ONLY = ToolAnnotations(read_only_hint=True)
SEEDED = [("t1", "Renew the office lease", "Maya"), ("t2", "Order printer toner", "")]


class Task(BaseModel):
    id: str
    title: str
    assignee: str = ""
    archived: bool = False


class Board(BaseModel):
    plan: Literal["free", "pro"]
    tasks: list[Task]


@dataclass
class State:
    plan: str = "free"
    next: int = 3

    def __post_init__(self) -> None:
        self.tasks = [Task(id=i, title=t, assignee=a) for i, t, a in SEEDED]

    def find(self, task_id: str) -> Task:
        for task in self.tasks:
            if task.id == task_id.strip().lower():
                return task
        known = ", ".join(t.id for t in self.tasks)
        raise ToolError(f"no task {task_id!r} (known: {known})")


async def _announce(ctx: Context) -> None:
    """Tell the client the tool list changed, in both protocol eras: a handshake-era session
    gets `notifications/tools/list_changed` on its channel; a 2026-07-28 client gets the event
    on the `subscriptions/listen` stream it opened. Each era's SDK drops the other's copy, so
    a client hears it once."""
    await ctx.session.send_tool_list_changed()
    await ctx.notify_tools_changed()


def build() -> MCPServer:
    server = MCPServer("workspace")
    kept = State()

    def archive_task(task_id: str) -> str:
        """Archive a task by its id (t1, t2, …): it leaves the board but is kept (pro plan)."""
        task = kept.find(task_id)
        task.archived = True
        return f"archived {task.id}: {task.title}"

    def assign_task(task_id: str, person: str) -> str:
        """Assign a task to a person by first name (pro plan)."""
        task = kept.find(task_id)
        if not person.strip():
            raise ToolError("name the person to assign the task to")
        task.assignee = person.strip()
        return f"{task.id} ({task.title}) is now assigned to {task.assignee}"

    def export_tasks(format: Literal["csv", "markdown"] = "csv") -> str:
        """Export the open tasks as CSV or a Markdown table (pro plan)."""
        rows = [t for t in kept.tasks if not t.archived]
        if format == "markdown":
            lines = ["| id | title | assignee |", "|---|---|---|"]
            return "\n".join(lines + [f"| {t.id} | {t.title} | {t.assignee} |" for t in rows])
        return _csv(rows)

    def export_tasks_csv() -> str:
        """Export the open tasks as CSV (free plan)."""
        return _csv([t for t in kept.tasks if not t.archived])

    pro: list[Callable[..., Any]] = [archive_task, assign_task, export_tasks]
    free: list[Callable[..., Any]] = [export_tasks_csv]

    offered: set[str] = set()

    def offer(plan: str) -> None:
        for tool in pro if plan == "free" else free:
            if tool.__name__ in offered:
                server.remove_tool(tool.__name__)
                offered.discard(tool.__name__)
        for tool in free if plan == "free" else pro:
            if tool.__name__ not in offered:
                server.add_tool(tool)
                offered.add(tool.__name__)
        kept.plan = plan

    @server.tool(annotations=READ_ONLY)
    def list_tasks() -> Board:
        """The board: the workspace's plan and its open tasks (id, title, assignee)."""
        plan: Literal["free", "pro"] = "pro" if kept.plan == "pro" else "free"
        return Board(plan=plan, tasks=[t for t in kept.tasks if not t.archived])

    @server.tool()
    def add_task(title: str) -> CallToolResult:
        """Add a task to the board; answers with its id."""
        if not title.strip():
            raise ToolError("a task needs a title")
        task = Task(id=f"t{kept.next}", title=title.strip())
        kept.next += 1
        kept.tasks.append(task)
        return CallToolResult(
            content=[TextContent(type="text", text=f"Added “{task.title}” to the board.")],
            structured_content=task.model_dump(),
        )

    @server.tool()
    async def set_plan(plan: Literal["free", "pro"], ctx: Context) -> str:
        """Switch the workspace's plan (an admin action); the tools on offer change with it."""
        if plan != kept.plan:
            offer(plan)
            await _announce(ctx)
        return f"the workspace is on the {plan} plan"

    @server.tool()
    async def reset_workspace(ctx: Context) -> str:
        """Put the board back as it was: the free plan and the two seeded tasks."""
        was = kept.plan
        fresh = State()
        kept.tasks, kept.next = fresh.tasks, fresh.next
        offer("free")
        if was != "free":
            await _announce(ctx)
        return "the workspace is reset"

    @server.tool(name="farm_set_plan", meta=CONTROL)
    async def farm_set_plan(plan: Literal["free", "pro"], ctx: Context) -> str:
        """`set_plan` for the farm only: a tool-list change the model never sees the cause
        of (a turn's hidden `trigger`, docs/state.md)."""
        return await set_plan(plan, ctx)

    def snapshot() -> dict[str, Any]:
        return {"plan": kept.plan, "tasks": [t.model_dump() for t in kept.tasks]}

    def restore(state: dict[str, Any]) -> None:
        # The plan is left as it is: changing it would change the tool list, which a restore
        # between turns must not do behind the model's back.
        kept.tasks = [Task.model_validate(t) for t in state.get("tasks", [])]
        kept.next = 1 + max((int(t.id[1:]) for t in kept.tasks if t.id[1:].isdigit()), default=0)

    add_control(server, snapshot, restore)
    offer("free")
    return server


def _csv(rows: list[Task]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "title", "assignee"])
    writer.writerows([t.id, t.title, t.assignee] for t in rows)
    return out.getvalue()


if __name__ == "__main__":
    serve(lambda _a: build())
