"""What of a spec file parses when the whole does not, so every other check still runs on it.

`farm scenarios validate` reports every problem of a file at once. A schema error must not
hide the rest, so the file is parsed again with what failed taken out: a field that is not
allowed or has a wrong value is left out (its default applies), and a scenario, server or tool
set that still cannot parse is left out whole. The other checks run on what remains; their
problems are numbered as in the file, and none is reported at or under a field that was
taken out (there it would be about the repair, not the file).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from mcp_farm.schema.errors import SpecError
from mcp_farm.schema.parse.loading import field_path, plain_loc, spec_errors

M = TypeVar("M", bound=BaseModel)

PARTS = ("scenarios", "servers", "toolsets")
"""The lists whose items are left out whole when they cannot be repaired."""

MAX_ROUNDS = 64
"""Repairs tried before giving up (each takes out at least one field or item)."""

_LEADING = re.compile(r"^(?P<part>[a-z_]+)\[(?P<index>\d+)\]")


@dataclass
class Salvaged(Generic[M]):
    """A file's parse: the whole model when it parses, else what could be kept of it."""

    whole: M | None
    """The model, when the file parses as it is."""
    parsed: M | None
    """The model with what failed taken out (the whole one when nothing failed); None when
    no repair made it parse."""
    errors: list[SpecError] = field(default_factory=list)
    """Every schema error of the file as written."""
    kept: dict[str, list[int]] = field(default_factory=dict)
    """Per list of PARTS: the index in the file of each item `parsed` holds."""
    taken_out: list[str] = field(default_factory=list)
    """The fields taken out, as the file numbers them."""

    def renumbered(self, problem: SpecError) -> SpecError:
        """A problem found in `parsed`, its field numbered as in the file."""
        m = _LEADING.match(problem.field)
        kept = self.kept.get(m.group("part")) if m else None
        if m is None or kept is None or int(m.group("index")) >= len(kept):
            return problem
        at = f"{m.group('part')}[{kept[int(m.group('index'))]}]"
        return SpecError(problem.source, at + problem.field[m.end() :], problem.problem)

    def later(self, problems: Iterable[SpecError], source: str) -> list[SpecError]:
        """Problems found in `parsed` (those of `source` renumbered), less any at or under a
        field that was taken out or already has a schema error."""
        covered = [*self.taken_out, *(e.field for e in self.errors)]
        found = []
        for problem in problems:
            if problem.source == source:
                problem = self.renumbered(problem)
                if any(_within(problem.field, f) for f in covered):
                    continue
            found.append(problem)
        return found


def _within(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith((outer + ".", outer + "["))


def salvage(model: type[M], data: dict[str, Any], source: str) -> Salvaged[M]:
    """`data` parsed as `model`, or as much of it as parses (see the module's docstring)."""
    try:
        whole = model.model_validate(data)
    except ValidationError as exc:
        first = exc
    else:
        return Salvaged(whole, whole)
    result: Salvaged[M] = Salvaged(None, None, spec_errors(first, source))
    work = copy.deepcopy(data)
    dropped: dict[str, set[int]] = {p: set() for p in PARTS if isinstance(work.get(p), list)}
    failure: ValidationError = first
    for _round in range(MAX_ROUNDS):
        result.kept = {
            p: [i for i in range(len(work[p])) if i not in gone] for p, gone in dropped.items()
        }
        errors = [(_in_file(plain_loc(e["loc"]), result.kept), e["type"]) for e in failure.errors()]
        # An error above another one is often its echo (a list too short once an item
        # failed): repairing the deeper one first may be all it takes.
        repairs = [
            _repair(work, loc, kind, dropped)
            for loc, kind in errors
            if not any(len(other) > len(loc) and other[: len(loc)] == loc for other, _ in errors)
        ]
        if not any(repairs):
            return result
        result.taken_out += [r for r in repairs if r and r not in result.taken_out]
        result.kept = {
            p: [i for i in range(len(work[p])) if i not in gone] for p, gone in dropped.items()
        }
        view = work | {p: [work[p][i] for i in kept] for p, kept in result.kept.items()}
        try:
            result.parsed = model.model_validate(view)
        except ValidationError as exc:
            failure = exc
        else:
            return result
    return result


def _in_file(loc: tuple[int | str, ...], kept: dict[str, list[int]]) -> tuple[int | str, ...]:
    """A location in the repaired view, numbered as in the file."""
    if len(loc) >= 2 and isinstance(loc[0], str) and loc[0] in kept and isinstance(loc[1], int):
        return (loc[0], kept[loc[0]][loc[1]], *loc[2:])
    return loc


def _repair(
    work: dict[str, Any], loc: tuple[int | str, ...], kind: str, dropped: dict[str, set[int]]
) -> str | None:
    """Take out what the error at `loc` is about; the field taken out, or None if nothing
    could be. A field that is missing cannot be filled in: its scenario (server, tool set)
    goes."""
    in_part = len(loc) >= 2 and loc[0] in dropped and isinstance(loc[1], int)
    if kind != "missing":
        holder, key = _deepest_key(work, loc)
        deep_enough = len(loc) > 2 or not in_part
        if holder is not None and key is not None and deep_enough:
            del holder[key]
            return field_path(_key_loc(loc, key))
    if in_part:
        part, index = str(loc[0]), int(loc[1])
        if index not in dropped[part]:
            dropped[part].add(index)
            return f"{part}[{index}]"
    return None


def _deepest_key(
    work: dict[str, Any], loc: tuple[int | str, ...]
) -> tuple[dict[str, Any] | None, str | None]:
    """The mapping and key of the deepest mapping entry along `loc` (below a part's item)."""
    node: Any = work
    holder: dict[str, Any] | None = None
    key: str | None = None
    for depth, part in enumerate(loc):
        if isinstance(part, str) and isinstance(node, dict) and part in node:
            if not (depth == 0 and part in PARTS):
                holder, key = node, part
            node = node[part]
        elif isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            node = node[part]
        else:
            break
    return holder, key


def _key_loc(loc: tuple[int | str, ...], key: str) -> tuple[int | str, ...]:
    """`loc` cut after its last occurrence of `key`."""
    last = max(i for i, part in enumerate(loc) if part == key)
    return loc[: last + 1]
