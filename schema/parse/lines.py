"""Where a field is in its YAML file: the line a problem's field path (`scenarios[3].expect[0]`)
points at, so a person fixing the file goes straight to it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import yaml

from mcp_farm.schema.errors import SpecError

PART = re.compile(r"\[(\d+)\]|([^.\[\]]+)")
"""One step of a field path: `[3]` (an item) or a key."""


def yaml_tree(path: Path) -> yaml.Node | None:
    """The file's YAML node tree, whose nodes know their lines; None if it has none."""
    try:
        return yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, ValueError, yaml.YAMLError, RecursionError):
        return None  # the loader reports why the file does not parse


def line_of(tree: yaml.Node | None, field: str) -> int | None:
    """The 1-based line of `field` in `tree`: of its key, or of its item; of the deepest part
    of the path the file holds when the rest is not written (a field left out). None when
    not even the first part is there."""
    node, line = tree, None
    for match in PART.finditer(field):
        index, key = match.groups()
        found = _child(node, int(index) if index is not None else None, key)
        if found is None:
            break
        node, line = found
    return line


def _child(
    node: yaml.Node | None, index: int | None, key: str | None
) -> tuple[yaml.Node, int] | None:
    if isinstance(node, yaml.SequenceNode) and index is not None and index < len(node.value):
        item: yaml.Node = node.value[index]
        return item, item.start_mark.line + 1
    if isinstance(node, yaml.MappingNode) and key is not None:
        for name, value in node.value:
            if isinstance(name, yaml.ScalarNode) and name.value == key:
                return value, name.start_mark.line + 1
    return None


def with_lines(problems: Iterable[SpecError]) -> list[SpecError]:
    """Each problem with the line of its field added, where its file holds the field (each
    file read once)."""
    trees: dict[str, yaml.Node | None] = {}
    located: list[SpecError] = []
    for problem in problems:
        if problem.line is None and problem.field:
            if problem.source not in trees:
                trees[problem.source] = yaml_tree(Path(problem.source))
            line = line_of(trees[problem.source], problem.field)
            if line is not None:
                problem = type(problem)(problem.source, problem.field, problem.problem, line)
        located.append(problem)
    return located
