"""Deterministic identifiers: the same inputs always give the same id."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def is_unicode(text: str) -> bool:
    """Whether UTF-8 can encode the text: no lone surrogate, which a JSON `\\ud800` escape
    decodes to and which `digest`, PostgreSQL and most consumers refuse."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace, so equal values serialise equally."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    """The sha256 hex digest of a value's canonical JSON."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
