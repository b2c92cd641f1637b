"""The tool list as a sweep axis: distractor counts, description and name levels, their labels."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from mcp_farm.schema.parse.strict import Strict

Descriptions = Literal["as_is", "stripped", "first_sentence", "paraphrased", "swapped"]


Names = Literal["as_is", "namespaced", "scrambled", "colliding"]


DISTRACTOR_SERVER = "distractors"
"""The catalogue name of the server that serves every distractor tool (servers.yaml)."""


DISTRACTORS_VERSION = 2
"""Version of how distractors are made, drawn, placed and named (workers/mcp/toollist.py); a
level that draws them (or collides names) carries it, so a change gives its trials new ids."""


DESCRIPTION_REWRITES: dict[str, int] = {"paraphrased": 2, "swapped": 2}
"""Version of each `descriptions` level's rewrite (workers/mcp/describe.py), carried by its
levels (`ToolListLevel.descriptions_version`), so a change gives their trials new ids and no
other trial's. 2: the paraphrase keeps verbatim what must be kept and rewords far more; the
swapped pair is drawn by the trial's seed."""


LABEL_MARK = "@"
"""Separates a prompt config's id from its tool-list level in a configuration label."""


class ToolListAxes(Strict):
    """A sweep's `tool_list:` block: the levels of each axis, crossed with each other and with
    the sweep's other axes. An axis left out runs at its one default level."""

    tool_count: list[int] = Field(default_factory=lambda: [0])
    """Distractor tools added to each trial's list (0: the scenario's own tools only)."""
    descriptions: list[Descriptions] = Field(default_factory=lambda: list[Descriptions](["as_is"]))
    """What the model is shown of each tool's description; the server still gets real names."""
    names: list[Names] = Field(default_factory=lambda: list[Names](["as_is"]))
    """How tools are named to the model; calls are mapped back to the real tool."""
    threshold: float = Field(default=0.5, gt=0.0, le=1.0)
    """The pass rate whose crossing the scorecard reports: the first tool count below it."""

    @field_validator("tool_count")
    @classmethod
    def _counts(cls, counts: list[int]) -> list[int]:
        if not counts or any(c < 0 for c in counts) or len(set(counts)) < len(counts):
            raise ValueError("name each tool count once, as a whole number ≥ 0")
        return sorted(counts)

    @field_validator("descriptions", "names")
    @classmethod
    def _once(cls, levels: list[str]) -> list[str]:
        if not levels or len(set(levels)) < len(levels):
            raise ValueError("name each level once")
        return levels

    def levels(self) -> list[ToolListLevel]:
        """Every crossing of the axes, in a stable order."""
        return [
            ToolListLevel.at(count, words, names)
            for count in self.tool_count
            for words in self.descriptions
            for names in self.names
        ]


class ToolListLevel(Strict):
    """One trial's tool-list level: part of its payload, so of its id and provenance."""

    version: int = 1
    """Version of how a level shapes the list (drawing, rewriting, naming); a change bumps it."""
    tool_count: int = Field(default=0, ge=0)
    """Distractors drawn into the list."""
    descriptions: Descriptions = "as_is"
    names: Names = "as_is"
    distractors: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """DISTRACTORS_VERSION on a level with distractors or `colliding` names; left out (and out
    of the trial id) on the others, whose lists it does not touch."""
    descriptions_version: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """DESCRIPTION_REWRITES' version on a level whose descriptions have one (`paraphrased`,
    `swapped`); left out (and out of the trial id) on the others, and on trials recorded
    before it was kept."""

    @classmethod
    def at(cls, count: int, descriptions: Descriptions, names: Names) -> ToolListLevel:
        """The level of a sweep's axes, with the distractors' and the descriptions' versions
        where they apply."""
        touched = count > 0 or names == "colliding"
        return cls(
            tool_count=count,
            descriptions=descriptions,
            names=names,
            distractors=DISTRACTORS_VERSION if touched else None,
            descriptions_version=DESCRIPTION_REWRITES.get(descriptions),
        )

    def label(self) -> str:
        """The level as the configuration label shows it after the prompt id."""
        return f"tools={self.tool_count},desc={self.descriptions},names={self.names}"


LABEL = re.compile(r"^(?P<prompt>.*)@tools=(?P<count>\d+),desc=(?P<desc>\w+),names=(?P<names>\w+)$")


def labelled(prompt_id: str, level: ToolListLevel) -> str:
    """The configuration label of a prompt config run at a tool-list level."""
    return f"{prompt_id}{LABEL_MARK}{level.label()}"


def parse_label(label: str) -> tuple[str, ToolListLevel] | None:
    """The prompt id and level a configuration label names; None for a label without one."""
    found = LABEL.match(label)
    if found is None:
        return None
    named = ToolListLevel(descriptions=found["desc"], names=found["names"])
    level = ToolListLevel.at(int(found["count"]), named.descriptions, named.names)
    return found["prompt"], level
