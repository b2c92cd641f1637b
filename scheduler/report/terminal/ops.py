"""Terminal views of the distributed farm: a sweep's progress and the worker nodes."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from mcp_farm.scheduler.operations.nodes import NodeView
from mcp_farm.scheduler.operations.progress import (
    STATES,
    SweepProgress,
)
from mcp_farm.scheduler.report.terminal.lines import duration
from mcp_farm.schema import mask_url


def progress_view(p: SweepProgress) -> RenderableType:
    """A bar, a summary line and a queue × state table; fits in 100 columns."""
    head = Text.assemble((p.sweep_id, "bold"), "  ", summary_line(p, sep="  "))
    table = Table(header_style="bold", title_justify="left")
    table.add_column("queue")
    for state in STATES:
        table.add_column(state, justify="right")
    for queue, counts in p.by_queue.items():
        table.add_row(queue, *(str(counts[s]) for s in STATES))
    outcomes = Text(
        "  ".join(f"{o} {n}" for o, n in sorted(p.outcomes.items(), key=lambda x: -x[1])),
        style="dim",
    )
    return Group(head, _bar(p.finished, p.total), table, outcomes)


def summary_line(p: SweepProgress, sep: str = " · ") -> str:
    """State, counts, pass rate and speed in one line.

    While trials are left: the rate over the last minutes and an ETA. Once none are: the
    overall rate and how long the sweep took, since a recent rate of a finished sweep is 0.
    """
    rate = "–" if p.pass_rate is None else f"{100 * p.pass_rate:.0f}%"
    parts = [p.state, f"{p.finished}/{p.total} finished", f"pass {rate}"]
    if p.remaining:
        parts += [f"{p.recent_per_s:.2f} trials/s", f"eta {duration(p.eta_s)}"]
    else:
        overall = "–" if p.overall_per_s is None else f"{p.overall_per_s:.2f}"
        parts += [f"{overall} trials/s overall", f"took {duration(p.took_s)}"]
    return sep.join(parts)


def progress_line(p: SweepProgress) -> str:
    """The summary as one plain line, for a log: `SWEEP · active · 6/24 finished · …`."""
    return f"{p.sweep_id} · {summary_line(p)}"


def _bar(done: int, total: int, width: int = 60) -> Text:
    filled = round(width * done / total) if total else width
    return Text.assemble(("━" * filled, "green"), ("━" * (width - filled), "grey23"))


def nodes_table(nodes: list[NodeView]) -> Table:
    table = Table(title="Worker nodes", title_justify="left", header_style="bold")
    for col in ("node", "tags", "state", "heartbeat", "conc.", "done", "models"):
        table.add_column(col, justify="right" if col in ("conc.", "done") else "left")
    style = {"up": "green", "stale": "yellow", "stopped": "dim"}
    for n in nodes:
        table.add_row(
            n.name,
            ",".join(n.tags),
            Text(n.state, style=style[n.state]),
            f"{duration(n.heartbeat_age_s)} ago",
            str(n.concurrency),
            str(n.trials_done),
            # Workers list the endpoints they reach; one given with credentials shows masked.
            mask_url(", ".join(n.models)) or "–",
        )
    return table
