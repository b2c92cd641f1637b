"""The user's calendar, kept in `events.json` inside the trial's sandbox folder.

Every call reads the file afresh and every change writes it back, so a warm server whose folder
the farm resets between trials never carries one trial's events into the next. "Today" is a
fixed date, so a request such as "what's on Thursday" has one right answer.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from mcp.types import ToolAnnotations

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    add_root,
    serve,
    session_root,
)

READ_ONLY = ToolAnnotations(read_only_hint=True)
DESTRUCTIVE = ToolAnnotations(destructive_hint=True)
"""A tool that deletes or overwrites what it cannot bring back (`confirm_destructive`)."""
TODAY = date(2026, 3, 10)
"""The fixed "today" of every productivity server (a Tuesday); tool descriptions repeat it."""
MAX_RANGE_DAYS = 62


@dataclass
class Event:
    id: str
    title: str
    start: str
    end: str
    location: str = ""
    attendees: list[str] = field(default_factory=list)

    @property
    def span(self) -> tuple[datetime, datetime]:
        return datetime.fromisoformat(self.start), datetime.fromisoformat(self.end)

    def line(self) -> str:
        start, end = self.span
        extra = f" @ {self.location}" if self.location else ""
        who = f" with {', '.join(self.attendees)}" if self.attendees else ""
        return f"  {start:%H:%M}–{end:%H:%M}  {self.title}{extra}{who}  [{self.id}]"


def parse_day(text: str, arg: str) -> date:
    try:
        return date.fromisoformat(text.strip()[:10])
    except ValueError:
        raise ToolError(f"{arg} must be a date like 2026-03-12, got {text!r}") from None


def parse_moment(text: str, arg: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ToolError(
            f"{arg} must be a date and time like 2026-03-12T15:00, got {text!r}"
        ) from None
    return moment.replace(tzinfo=None, second=0, microsecond=0)


def parse_clock(text: str, arg: str) -> time:
    try:
        return time.fromisoformat(text.strip())
    except ValueError:
        raise ToolError(f"{arg} must be a time like 09:00, got {text!r}") from None


class Calendar:
    """The events file of one sandbox: load on every call, save after every change."""

    def __init__(self, root: Path) -> None:
        self._root = root

    @property
    def path(self) -> Path:
        return session_root(self._root) / "events.json"

    @property
    def shared(self) -> Path:
        return session_root(self._root) / "shared-availability.json"

    def load(self) -> list[Event]:
        data: dict[str, Any] = json.loads(self.path.read_text(encoding="utf-8"))
        return [Event(**e) for e in data["events"]]

    def save(self, events: list[Event]) -> None:
        events.sort(key=lambda e: (e.start, e.id))
        body = {"events": [asdict(e) for e in events]}
        self.path.write_text(json.dumps(body, indent=1, ensure_ascii=False), encoding="utf-8")

    def busy(self, day: date, events: list[Event] | None = None) -> list[tuple[datetime, datetime]]:
        return sorted(e.span for e in events or self.load() if e.span[0].date() == day)


def free_windows(
    busy: list[tuple[datetime, datetime]], day: date, earliest: time, latest: time, minutes: int
) -> list[tuple[datetime, datetime]]:
    """The gaps of at least `minutes` between `earliest` and `latest` that nothing covers."""
    cursor, stop = datetime.combine(day, earliest), datetime.combine(day, latest)
    windows = []
    for start, end in sorted(busy):
        if start > cursor:
            windows.append((cursor, min(start, stop)))
        cursor = max(cursor, end)
    windows.append((cursor, stop))
    need = timedelta(minutes=minutes)
    return [(a, b) for a, b in windows if b - a >= need]


def day_heading(day: date) -> str:
    return f"{day:%a} {day.isoformat()}"


def build(root: Path) -> MCPServer:
    cal = Calendar(root)
    server = MCPServer(
        "calendar", instructions=f"The user's calendar. Today is {TODAY:%A} {TODAY}."
    )

    @server.tool(annotations=READ_ONLY)
    def list_events(start_date: str, end_date: str | None = None) -> str:
        """List the user's calendar events from start_date to end_date (YYYY-MM-DD, inclusive); today is Tuesday 2026-03-10.

        Leave out end_date for a single day. Each event shows its time, title, place,
        attendees and id.
        """
        first = parse_day(start_date, "start_date")
        last = parse_day(end_date, "end_date") if end_date else first
        if last < first:
            raise ToolError("end_date is before start_date")
        if (last - first).days > MAX_RANGE_DAYS:
            raise ToolError(f"ask for at most {MAX_RANGE_DAYS} days at a time")
        events = cal.load()
        lines = []
        day = first
        while day <= last:
            todays = [e for e in events if e.span[0].date() == day]
            lines.append(day_heading(day) + ("" if todays else "  (nothing scheduled)"))
            lines.extend(e.line() for e in todays)
            day += timedelta(days=1)
        return "\n".join(lines)

    @server.tool()
    def create_event(
        title: str, start: str, end: str, location: str = "", attendees: list[str] | None = None
    ) -> str:
        """Add an event to the user's calendar; start and end like 2026-03-12T15:00 (today is Tuesday 2026-03-10).

        attendees are email addresses. Overlapping events are allowed but reported.
        """
        begin, finish = parse_moment(start, "start"), parse_moment(end, "end")
        if finish <= begin:
            raise ToolError("end must be after start")
        if not title.strip():
            raise ToolError("the event needs a title")
        events = cal.load()
        number = max((int(e.id.split("-")[1]) for e in events), default=1000) + 1
        event = Event(
            f"evt-{number}",
            title.strip(),
            begin.isoformat(timespec="minutes"),
            finish.isoformat(timespec="minutes"),
            location.strip(),
            list(attendees or []),
        )
        clashes = [e for e in events if e.span[0] < finish and begin < e.span[1]]
        cal.save([*events, event])
        text = f"created {event.id}: {event.title}, {day_heading(begin.date())} {begin:%H:%M}–{finish:%H:%M}"
        if clashes:
            text += "\nwarning: overlaps " + "; ".join(f"{e.title} [{e.id}]" for e in clashes)
        return text

    @server.tool(annotations=READ_ONLY)
    def find_free_slot(
        date: str, duration_minutes: int = 30, earliest: str = "09:00", latest: str = "18:00"
    ) -> str:
        """Find the gaps in the user's own calendar on one day (YYYY-MM-DD) long enough for a meeting; today is Tuesday 2026-03-10.

        Looks between `earliest` and `latest` (working hours by default) and lists every
        free window of at least duration_minutes.
        """
        day = parse_day(date, "date")
        if duration_minutes <= 0:
            raise ToolError("duration_minutes must be positive")
        lo, hi = parse_clock(earliest, "earliest"), parse_clock(latest, "latest")
        windows = free_windows(cal.busy(day), day, lo, hi, duration_minutes)
        head = f"{day_heading(day)}, free for at least {duration_minutes} min between {lo:%H:%M} and {hi:%H:%M}:"
        if not windows:
            return head + "\n  no free slot"
        return "\n".join(
            [head] + [f"  {a:%H:%M}–{b:%H:%M} ({(b - a).seconds // 60} min)" for a, b in windows]
        )

    @server.tool(annotations=DESTRUCTIVE)
    def cancel_event(event_id: str) -> str:
        """Cancel (delete) one event from the user's calendar by its id, e.g. evt-1017."""
        events = cal.load()
        gone = [e for e in events if e.id == event_id.strip()]
        if not gone:
            raise ToolError(f"no event with id {event_id!r}; list_events shows the ids")
        cal.save([e for e in events if e.id != event_id.strip()])
        start, _end = gone[0].span
        return f"cancelled {gone[0].id}: {gone[0].title}, {day_heading(start.date())} {start:%H:%M}"

    @server.tool(annotations=READ_ONLY)
    def find_meeting_time(attendees: list[str], date: str, duration_minutes: int = 30) -> str:
        """Suggest a time on one day when the user AND the given colleagues are all free.

        Uses the busy times colleagues share (attendees are their email addresses); for the
        user's own free time alone, use find_free_slot.
        """
        day = parse_day(date, "date")
        shared: dict[str, list[list[str]]] = json.loads(cal.shared.read_text(encoding="utf-8"))[
            "busy"
        ]
        busy = cal.busy(day)
        for person in attendees:
            if person.strip().lower() not in shared:
                raise ToolError(f"{person} does not share a calendar with you")
            for a, b in shared[person.strip().lower()]:
                span = (parse_moment(a, "busy"), parse_moment(b, "busy"))
                if span[0].date() == day:
                    busy.append(span)
        windows = free_windows(busy, day, time(9), time(18), duration_minutes)
        if not windows:
            return f"no common free time on {day_heading(day)}"
        first = windows[0][0]
        return f"everyone is free on {day_heading(day)} from {first:%H:%M} ({duration_minutes} min)"

    return server


def _args(parser: argparse.ArgumentParser) -> None:
    add_root(parser, "calendar", "folder holding events.json")


if __name__ == "__main__":
    serve(lambda a: build(a.root), add_args=_args)
