"""Strict YAML loading: parse at the edge, and name the file and the field on any error."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from schema.errors import SpecError

M = TypeVar("M", bound=BaseModel)


def read_yaml(path: Path) -> Any:
    """Parse a YAML file, turning I/O and syntax errors into a SpecError naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(str(path), "", "file not found") from None
    except OSError as exc:
        raise SpecError(str(path), "", f"cannot read: {exc.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(str(path), where, f"invalid YAML: {problem}") from None


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
        # Drop pydantic's internal validator names ("function-after[...]") from the path.
        loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and "[" in p))
        value = error.get("input")
        shown = f" (got {value!r})" if not isinstance(value, dict | list) else ""
        found.append(SpecError(source, field_path(loc), f"{error['msg']}{shown}"))
    return found


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
