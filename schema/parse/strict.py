"""The base of every user-written spec."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Base for every user-written spec: unknown fields are errors, never ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)
