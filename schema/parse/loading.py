"""Strict YAML loading: parse at the edge, and name the file and the field on any error."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from mcp_farm.schema.errors import SpecError
from mcp_farm.schema.ids import is_unicode

M = TypeVar("M", bound=BaseModel)


def read_yaml(path: Path) -> Any:
    """Parse a YAML file, turning I/O and syntax errors into a SpecError naming the file.

    Only plain data comes back (see `plain_data_problem`); anything else is a SpecError too.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(str(path), "", "file not found") from None
    except OSError as exc:
        raise SpecError(str(path), "", f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(
            str(path), "", f"not UTF-8 text: {exc.reason} at byte {exc.start}"
        ) from None
    except ValueError as exc:  # a path the OS cannot name (an embedded NUL)
        raise SpecError(str(path), "", f"cannot read: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(str(path), where, f"invalid YAML: {problem}") from None
    except ValueError as exc:
        # PyYAML builds values as it parses: a date like 2024-13-01, or an integer past
        # Python's digit limit, fails inside its constructors with a plain ValueError.
        raise SpecError(str(path), "", f"invalid YAML value: {exc}") from None
    except RecursionError:
        raise SpecError(str(path), "", "invalid YAML: nested too deeply") from None
    problem = plain_data_problem(data)
    if problem:
        raise SpecError(str(path), *problem)
    return data


def plain_data_problem(data: Any) -> tuple[str, str] | None:
    """(field, problem) for the first value that is not plain data, or None.

    Plain data is what JSON can say: mappings with text keys, lists, text, numbers, booleans
    and null. YAML can say more (dates, binary, sets, pairs, values that contain themselves
    through an alias, strings with lone surrogates from `\\ud800` escapes); specs are hashed and
    stored as JSON, so such a value would fail far from the file that holds it.
    """
    checked: set[int] = set()  # containers reached again through an alias are checked once
    open_: set[int] = set()  # containers being walked: meeting one again is a cycle

    def walk(value: Any, loc: tuple[int | str, ...]) -> tuple[str, str] | None:
        if isinstance(value, str):
            return None if is_unicode(value) else (field_path(loc), "text with a lone surrogate")
        if value is None or isinstance(value, bool | int | float):
            return None
        if not isinstance(value, dict | list):
            kind = type(value).__name__
            return field_path(loc), f"a {kind} value, where only plain data is allowed (quote it)"
        if id(value) in open_:
            return field_path(loc), "a value that contains itself (through a YAML alias)"
        if id(value) in checked:
            return None
        checked.add(id(value))
        open_.add(id(value))
        items: list[tuple[int | str, Any]] = []
        if isinstance(value, list):
            items = list(enumerate(value))
        for key, child in value.items() if isinstance(value, dict) else ():
            if not isinstance(key, str) or not is_unicode(key):
                return field_path(loc), f"the key {_short(key)} is not text (quote it)"
            items.append((key, child))
        for key, child in items:
            found = walk(child, (*loc, key))
            if found:
                return found
        open_.discard(id(value))
        return None

    try:
        return walk(data, ())
    except RecursionError:
        return "", "nested too deeply"


def field_path(loc: tuple[int | str, ...]) -> str:
    """`('expect', 0, 'params', 'path')` → `expect[0].params.path`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def spec_errors(exc: ValidationError, source: str) -> list[SpecError]:
    """Each pydantic error as a SpecError naming the field (and the value, when short)."""
    found = []
    for error in exc.errors():
        value = error.get("input")
        shown = f" (got {_short(value)})" if not isinstance(value, dict | list) else ""
        # Our own validators raise ValueError; pydantic's "Value error, " prefix says nothing.
        message = error["msg"].removeprefix("Value error, ") + shown
        if error["type"] == "string_type" and isinstance(value, dict) and len(value) == 1:
            message += _mapping_hint(value)
        elif error["type"] == "string_type" and isinstance(value, bool):
            names = [p for p in plain_loc(error["loc"]) if isinstance(p, str)]
            message += _boolean_hint(names[-1] if names else "text", value)
        found.append(SpecError(source, field_path(plain_loc(error["loc"])), message))
    return found


def plain_loc(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """A pydantic error's location as the file's path: without pydantic's internal validator
    and union tag names (`function-after[...]`, `tool[choice]`)."""
    return tuple(p for p in loc if not (isinstance(p, str) and "[" in p))


def _boolean_hint(name: str, value: bool) -> str:
    """Why text became a boolean: an unquoted `yes`, `no`, `on`, `off`, `true` or `false`."""
    word = "yes" if value else "no"
    return (
        ": YAML reads an unquoted yes, no, on, off, true or false as a boolean; quote the text, "
        f'as in {name}: "{word}"'
    )


def _mapping_hint(value: dict[Any, Any]) -> str:
    """Why text became a one-entry mapping: an unquoted `: ` inside it."""
    key, inner = next(iter(value.items()))
    written = f"{key}: {inner}" if inner is not None else f"{key}:"
    return (
        f" (got the mapping {_short(value)}: YAML reads a `: ` in unquoted text as a key and "
        f"its value; quote the text, as in {_short(written)})"
    )


def _short(value: Any) -> str:
    """A value for a one-line message: long ones are cut in the middle."""
    try:
        text = repr(value)
    except ValueError:  # an integer past Python's digit limit
        return f"<{type(value).__name__}>"
    return text if len(text) <= 120 else f"{text[:80]}…{text[-30:]}"


def validate(model: type[M], data: Any, source: str) -> M:
    """Validate data against a spec model; the first error becomes a SpecError."""
    if not isinstance(data, dict):
        raise SpecError(source, "", f"expected a mapping at the top, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise spec_errors(exc, source)[0] from None


def require_unique(ids: list[str], source: str, field: str, what: str) -> None:
    """SpecError naming `field[i].id` for the first id that repeats an earlier one."""
    seen: set[str] = set()
    for i, value in enumerate(ids):
        if value in seen:
            raise SpecError(source, f"{field}[{i}].id", f"duplicate {what} id {value!r}")
        seen.add(value)


def load_yaml_model(model: type[M], path: Path) -> M:
    """Read and validate one YAML file as `model`."""
    return validate(model, read_yaml(path), str(path))
