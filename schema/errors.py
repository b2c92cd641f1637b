"""The root of every error the farm raises on purpose."""

from __future__ import annotations


class FarmError(Exception):
    """Base of all deliberate farm errors; the CLI turns these into exit status 2."""


class SpecError(FarmError):
    """A YAML file or a spec value is invalid. The message names the file and the field."""

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source = source
        self.field = field
        self.problem = problem
        where = f"{source}: {field}" if field else source
        super().__init__(f"{where}: {problem}")


class StoreError(FarmError):
    """The results database could not be reached or written."""
