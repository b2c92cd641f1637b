"""Normal forms the matchers compare text in."""

from __future__ import annotations

import posixpath


def normalize(text: str) -> str:
    """Lower case, whitespace collapsed: `Q1  Budget` and `q1 budget` agree."""
    return " ".join(text.lower().split())


def normalize_path(text: str) -> str:
    """`~/Desktop/`, `/Desktop`, `./Desktop` and `Desktop` all become `Desktop`."""
    value = text.strip().replace("\\", "/")
    if value.startswith("~"):
        value = value[1:]
    value = posixpath.normpath("/" + value.lstrip("/"))
    return value.lstrip("/") or "."
