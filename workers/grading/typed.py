"""What a tool's input schema says about the type at one place inside an argument.

JSON writes `0` and `0.0` alike for a parameter the schema types `number`, and a model (or
the runtime decoding its reply) may print either; for `integer`, `5.0` is not what the tool
asked for. So `exact` and `one_of` compare numbers the way the schema at that place types
them (docs/decisions.md). A `Typed` walks down the schema as the matchers walk down the
value: `properties` (or `additionalProperties`) for a key, `prefixItems` / `items` for an
item, through `anyOf` / `oneOf` / `allOf` branches and local `$ref`s. Where the schema says
nothing that can be followed, the JSON types are held as written.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

NumberRule = Literal["value", "integer", "held"]
"""How numbers compare at a place: by value (`number`), integers only, by value (`integer`),
or with their JSON types held (no schema, or one that does not type the place)."""

_BRANCHES = ("anyOf", "oneOf", "allOf")
_MAX_DEPTH = 16
"""References followed before giving up: a schema may refer to itself."""


@dataclass(frozen=True)
class Typed:
    """One place inside a tool's arguments, and the schema the tool gives it."""

    node: Any = None
    """The schema at this place; None where there is none to follow."""
    root: Any = None
    """The tool's whole input schema, where local `$ref`s point."""

    @classmethod
    def argument(cls, schema: dict[str, Any] | None, name: str) -> Typed:
        """The place of argument `name` in a tool's input schema (None: no schema known)."""
        return cls(schema, schema).key(name) if isinstance(schema, dict) else UNTYPED

    def key(self, name: str) -> Typed:
        """The place of an object's key `name` below this one."""
        found = []
        for node in self._branches():
            properties = node.get("properties")
            if isinstance(properties, dict) and name in properties:
                found.append(properties[name])
            elif isinstance(node.get("additionalProperties"), dict):
                found.append(node["additionalProperties"])
        return self._below(found)

    def item(self, index: int) -> Typed:
        """The place of an array's item at `index` below this one."""
        found = []
        for node in self._branches():
            fixed = node.get("prefixItems", node.get("items"))
            if isinstance(fixed, list):
                rest = node.get("items") if "prefixItems" in node else node.get("additionalItems")
                found.append(fixed[index] if index < len(fixed) else rest)
            elif isinstance(fixed, dict):
                found.append(fixed)
        return self._below([f for f in found if isinstance(f, dict)])

    def numbers(self) -> NumberRule:
        """How two numbers compare here: the schema's `type`, in any of its branches."""
        types: set[str] = set()
        for node in self._branches():
            said = node.get("type")
            types |= {said} if isinstance(said, str) else set(said or [])
        if "number" in types:
            return "value"
        return "integer" if "integer" in types else "held"

    def _below(self, found: list[Any]) -> Typed:
        if not found:
            return Typed(None, self.root)
        return Typed(found[0] if len(found) == 1 else {"anyOf": found}, self.root)

    def _branches(self) -> Iterator[dict[str, Any]]:
        """This place's schema and each of its branches, references followed."""
        todo: list[tuple[Any, int]] = [(self.node, 0)]
        while todo:
            node, depth = todo.pop()
            if not isinstance(node, dict) or depth > _MAX_DEPTH:
                continue
            ref = node.get("$ref")
            if isinstance(ref, str):
                todo.append((self._resolve(ref), depth + 1))
            yield node
            for name in _BRANCHES:
                branches = node.get(name)
                if isinstance(branches, list):
                    todo += [(b, depth + 1) for b in branches]

    def _resolve(self, ref: str) -> Any:
        """A local reference (`#/$defs/Item`) in the root schema; None for any other."""
        if not ref.startswith("#"):
            return None
        node = self.root
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node


UNTYPED = Typed()
"""A place no schema speaks about: JSON types are held as written."""

_ANY_NUMBER: dict[str, Any] = {"type": ["number"]}
_ANY_NUMBER["items"] = _ANY_NUMBER
_ANY_NUMBER["additionalProperties"] = _ANY_NUMBER
BY_VALUE = Typed(_ANY_NUMBER, _ANY_NUMBER)
"""Every place, at any depth, compares numbers by value (`900` is `900.0`), as state probes
do: what a probe finds has no schema, and the state it reads (a SQLite REAL column, a JSON
document) may write a whole number either way. A boolean is still never a number."""
