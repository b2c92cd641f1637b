"""A value at a path from the top of a JSON value (`a.b[0].c`), as a chained matcher's
`from_key` and a state probe's `at:` name one; shared by the grader (workers) and `farm
replay` (scheduler), which shows the part of a probe's value that `at:` judges."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_PATH_STEP = re.compile(r"\.?([^.\[\]]+)|\[(\d+)\]")


def values_at(value: Any, path: str) -> Iterator[Any]:
    """The value at a path from the top (`a.b[0].c`); nothing when the path leads nowhere."""
    for m in _PATH_STEP.finditer(path):
        name, index = m.group(1), m.group(2)
        if name is not None and isinstance(value, dict) and name in value:
            value = value[name]
        elif index is not None and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return
    yield value


def value_at(value: Any, path: str) -> Any:
    """The value at a path from the top (`a.b[0].c`); None when the path leads nowhere."""
    return next(values_at(value, path), None)
