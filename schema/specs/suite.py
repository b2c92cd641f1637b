"""The files that hold specs as a whole: a suite of scenarios, the server catalogue."""

from __future__ import annotations

from pydantic import Field

from mcp_farm.schema.answer import CodeRepo, ToolSet
from mcp_farm.schema.expect import GradeBy
from mcp_farm.schema.parse.ignore import IgnoreRules
from mcp_farm.schema.parse.strict import Strict
from mcp_farm.schema.specs.scenario import Scenario
from mcp_farm.schema.specs.server import ServerDef


class Suite(Strict):
    """A YAML file of scenarios."""

    suite: str
    description: str = ""
    servers: list[ServerDef] = Field(default_factory=list)
    """Servers only this suite uses, added to the catalogue in scenarios/servers.yaml."""
    toolsets: list[ToolSet] = Field(default_factory=list)
    """Tool sets this suite's scenarios can run with; a sweep picks them by id (`toolsets:`)."""
    repo: CodeRepo | None = None
    """The pinned source tree that citations in answers are checked against."""
    rubric: str | None = None
    """Default rubric id (scenarios/rubrics/<id>.yaml) for scenarios with an `answer`."""
    ignore: IgnoreRules = Field(default_factory=IgnoreRules)
    """Ignore rules (ServerDef.ignore) added to those of every server this suite's scenarios
    attach, its own servers and the catalogue's alike."""
    grade_by: GradeBy | None = None
    """The `grade_by` of every scenario of this suite that has `state:` probes and gives
    none of its own."""
    scenarios: list[Scenario] = Field(min_length=1)


class ServerCatalog(Strict):
    servers: list[ServerDef]
