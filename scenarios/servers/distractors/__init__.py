"""Distractor tools for the tool-count axis: the catalogue and the server that lists it."""

from mcp_farm.scenarios.servers.distractors._made import (
    ADD_TOOL,
    NEAR_SUFFIXES,
    Distractor,
    mirror,
    near_miss,
)

__all__ = ["ADD_TOOL", "NEAR_SUFFIXES", "Distractor", "mirror", "near_miss"]
