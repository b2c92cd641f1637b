"""Validating against a tool's schema compiles it once and judges exactly as jsonschema does."""

from __future__ import annotations

from datetime import date
from typing import Any

import jsonschema
import pytest

from mcp_farm.workers.grading import schemacheck
from mcp_farm.workers.grading.schemacheck import schema_error

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "depth": {"type": "integer", "minimum": 0},
    },
    "required": ["path"],
}


def _validate_message(value: Any, schema: dict[str, Any]) -> str | None:
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        return exc.message
    return None


@pytest.mark.parametrize(
    "value",
    [
        {"path": "/Desktop"},
        {"path": ""},
        {"depth": 2},
        {"path": "/", "depth": -1},
        {"path": 7, "depth": "deep"},
        [],
    ],
)
def test_a_compiled_schema_reports_what_jsonschema_validate_reports(value: Any) -> None:
    error = schema_error(value, SCHEMA)
    assert (error.message if error else None) == _validate_message(value, SCHEMA)


def test_a_schema_is_checked_and_compiled_once_for_every_later_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(schemacheck, "_compiled", {})
    checked: list[object] = []
    real = jsonschema.Draft202012Validator.check_schema

    def counting(schema: Any, **kwargs: Any) -> None:
        checked.append(schema)
        real(schema, **kwargs)

    monkeypatch.setattr(jsonschema.Draft202012Validator, "check_schema", counting)
    for depth in range(5):
        schema_error({"path": "/", "depth": depth}, dict(SCHEMA))
    assert len(checked) == 1


def test_changing_the_callers_schema_later_does_not_change_the_compiled_one() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert schema_error({"n": 1}, schema) is None
    schema["properties"]["n"]["type"] = "string"  # a new schema now, judged as such
    assert schema_error({"n": 1}, schema) is not None
    assert (
        schema_error({"n": 1}, {"type": "object", "properties": {"n": {"type": "integer"}}}) is None
    )


def test_an_invalid_schema_raises_every_time_it_is_used() -> None:
    broken = {"type": "no-such-type"}
    for _ in range(2):
        with pytest.raises(jsonschema.SchemaError):
            schema_error({}, broken)


def test_a_schema_with_no_json_form_is_still_applied() -> None:
    schema = {"const": date(2024, 1, 2)}
    assert schema_error(date(2024, 1, 2), schema) is None
    assert schema_error("2024-01-02", schema) is not None
