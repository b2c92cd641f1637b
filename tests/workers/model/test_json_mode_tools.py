"""The tool listing of JSON-in-text modes carries what a native `tools` array carries: the
whole description and the argument schema, so json vs native compares formats, not facts."""

from __future__ import annotations

import json

from mcp_farm.scenarios import load_prompt
from mcp_farm.workers.model.encode import (
    opening_messages,
    servers_as_text,
    tools_as_text,
)
from mcp_farm.workers.model.toolspec import ToolSpec

SCHEMA = {
    "title": "schedule_meetingArguments",
    "type": "object",
    "properties": {
        "attendees": {
            "title": "Attendees",
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"email": {"type": "string"}, "role": {"enum": ["host", "guest"]}},
                "required": ["email"],
            },
        },
        "room": {"title": "Meeting room", "enum": ["north", "south"]},
        "minutes": {"type": "integer", "minimum": 15, "default": 30},
    },
    "required": ["attendees", "room"],
}
TOOL = ToolSpec(
    shown_name="schedule_meeting",
    server="calendar",
    tool="schedule_meeting",
    description="""Book a meeting room for a group.

        Rooms must be booked at least a day ahead; a guest cannot host.""",
    input_schema=SCHEMA,
)


def _arguments_line(text: str) -> dict[str, object]:
    line = next(line for line in text.splitlines() if line.startswith("  arguments: "))
    parsed: dict[str, object] = json.loads(line.removeprefix("  arguments: "))
    return parsed


def test_json_mode_shows_the_whole_description_and_the_full_argument_schema() -> None:
    text = tools_as_text([TOOL])
    assert text.splitlines()[:3] == [
        "Tools:",
        "- schedule_meeting: Book a meeting room for a group.",
        "  Rooms must be booked at least a day ahead; a guest cannot host.",
    ]
    shown = _arguments_line(text)
    # Item shapes, allowed values, bounds, defaults and what is required all survive.
    assert shown["required"] == ["attendees", "room"]
    properties = shown["properties"]
    assert isinstance(properties, dict)
    assert properties["attendees"]["items"] == SCHEMA["properties"]["attendees"]["items"]
    assert properties["minutes"] == {"type": "integer", "minimum": 15, "default": 30}
    # Titles derived from names say nothing and go; one that says something stays.
    assert "title" not in shown and "title" not in properties["attendees"]
    assert properties["room"] == {"title": "Meeting room", "enum": ["north", "south"]}


def test_a_tool_without_arguments_or_description_is_listed_plainly() -> None:
    bare = ToolSpec("ping", "s", "ping", "", {"type": "object", "properties": {}})
    assert tools_as_text([bare]) == "Tools:\n- ping: (no description)\n  arguments: none"


def test_the_json_prompt_puts_the_full_listing_in_the_system_message() -> None:
    system = opening_messages(load_prompt("json"), "Book it.", [TOOL])[0].content
    assert tools_as_text([TOOL]) in system
    assert '"enum": ["host", "guest"]' in system


def test_server_instructions_go_in_the_system_message_in_every_mode_and_only_when_given() -> None:
    told = {"calendar": "Times are in the user's zone.\n    Rooms: north, south.", "mail": "x"}
    for mode in ("native", "json"):
        plain = opening_messages(load_prompt(mode), "Book it.", [TOOL])[0].content
        system = opening_messages(load_prompt(mode), "Book it.", [TOOL], told)[0].content
        assert "About the servers" not in plain
        assert system.startswith(load_prompt(mode).system_prompt.strip())
        assert (
            "About the servers:\n- calendar: Times are in the user's zone.\n"
            "  Rooms: north, south.\n- mail: x"
        ) in system
        assert system.replace("\n\n" + servers_as_text(told), "") == plain
