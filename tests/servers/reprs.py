"""Test-only MCP server that answers look-ups the way some real servers do: `find_person`
prints a Python object (its repr, not JSON), `find_person_json` the same person as JSON, and
`add_note` keeps a note on a person; `rate` takes a number, `pick` an integer."""

from __future__ import annotations

import json
from dataclasses import dataclass

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    serve,
)


@dataclass
class Person:
    name: str
    status: str


ADA = Person("Ada Lovelace", "Status: paused since May")


def build() -> MCPServer:
    server = MCPServer("reprs")

    @server.tool()
    def find_person(name: str) -> str:
        """Look a person up; answers the record as the server's language prints it."""
        return repr([ADA])

    @server.tool()
    def find_person_json(name: str) -> str:
        """Look a person up; answers the record as JSON."""
        return json.dumps([{"name": ADA.name, "status": ADA.status}])

    @server.tool()
    def add_note(person: str, note: str) -> str:
        """Keep a note on a person."""
        return f"noted on {person}"

    @server.tool()
    def rate(stars: float) -> str:
        """Rate the last note, any number of stars."""
        return f"rated {stars:g}"

    @server.tool()
    def pick(count: int) -> str:
        """Pick a number of notes."""
        return f"picked {count}"

    return server


if __name__ == "__main__":
    serve(lambda _a: build())
