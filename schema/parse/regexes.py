"""The regular expressions scenarios and server definitions carry: checked at load, matched
within a time budget.

Every such pattern is written in Python's `re` syntax and checked against it when its spec is
loaded; graders and the session match it only through this module, with the `regex` engine
(version 0, which keeps `re`'s semantics) because that engine can stop a match that runs too
long. A pattern can backtrack for longer than a sweep lasts (`(a|aa)+$` on forty `a`s and a
`!`): such a match raises `PatternTimeout` after `MATCH_BUDGET_S`, which the worker records as
the trial's infrastructure error, naming the scenario (or server) and the field.

The load-time check also refuses the commonest shape of such a pattern, a repeat that holds
another repeat (`(a+)+`, `(\\w+\\s?)*`), so it is caught by `farm scenarios validate` instead.
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import regex

from mcp_farm.schema.errors import FarmError, SpecError

MATCH_BUDGET_S = 1.0
"""Seconds one match of a scenario's or server's pattern may take (a search, a full match, or
every match of one scan). Patterns the farm ships match a result in well under a millisecond;
a match still running after a second is backtracking without end."""

PATTERN_CHARS = 80
"""Characters of a pattern quoted in an error; a longer one is cut with `…`."""

# `re`'s own parser gives the pattern's structure exactly as `re` reads it (groups, classes,
# escapes, inline flags), which no hand-written scan would. It is private, hence Any.
_PARSER: Any = importlib.import_module("re._parser")
_C: Any = importlib.import_module("re._constants")

NESTED_REPEAT = (
    "a repeated group holds an unbounded repeat of its own (as `(a+)+` or `(\\w+\\s?)*` do), "
    "which can take exponential time on a text that almost matches: bound one of the two "
    "repeats (`{1,50}`), or make it possessive (`a++`) or atomic (`(?>a+)`)"
)


class PatternTimeout(FarmError):
    """A scenario's or a server's pattern ran past `MATCH_BUDGET_S` on one text. Never a
    `TimeoutError`: the trial did not run out of time, its grader could not finish."""

    def __init__(self, field: str, pattern: str, chars: int) -> None:
        self.field, self.pattern, self.chars = field, pattern, chars
        super().__init__(
            f"{field} /{shown(pattern)}/ ran past its {MATCH_BUDGET_S:g} s budget on "
            f"{chars:,} characters"
        )


def shown(pattern: str) -> str:
    """A pattern as an error quotes it: whole, or its first `PATTERN_CHARS` characters."""
    return pattern if len(pattern) <= PATTERN_CHARS else pattern[: PATTERN_CHARS - 1] + "…"


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` is not a usable regular expression, or None when it is."""
    flags = re.IGNORECASE | re.DOTALL
    try:
        with warnings.catch_warnings():
            # `re` warns where it reads a pattern another way than later Pythons (and the
            # `regex` engine: `[[:alpha:]]`) will: refused, so both engines agree on the rest.
            warnings.simplefilter("error", FutureWarning)
            parsed = _PARSER.parse(pattern, flags)  # uncached: warns every time
        re.compile(pattern, flags)  # the syntax scenarios are written in
        _compiled(pattern, flags)  # the engine that matches them
    except FutureWarning as exc:
        return f"ambiguous regular expression: {exc}; escape the character"
    except (re.error, regex.error) as exc:
        return f"invalid regular expression: {exc}"
    except (OverflowError, RecursionError) as exc:
        # A repeat count past the engine's limit, or groups nested past Python's stack.
        return f"invalid regular expression: {type(exc).__name__}: {exc}"
    return NESTED_REPEAT if _nested_repeat(parsed, inside=False) else None


def checked_regex(pattern: str | None) -> str | None:
    """`pattern` unchanged when it is usable (or absent); ValueError naming the problem
    otherwise. The one body of every validator of a regex field."""
    problem = regex_problem(pattern) if pattern is not None else None
    if problem:
        raise ValueError(problem)
    return pattern


def _nested_repeat(items: Iterable[tuple[Any, Any]], *, inside: bool) -> bool:
    """Whether an unbounded repeat stands inside another one (`inside`: we are in one already).

    A possessive repeat or an atomic group never gives back what it matched, so a repeat
    around it cannot retry it piece by piece: neither counts, though what is inside them is
    checked on its own."""
    for op, av in items:
        if op in (_C.MAX_REPEAT, _C.MIN_REPEAT):
            unbounded = av[1] == _C.MAXREPEAT
            if (unbounded and inside) or _nested_repeat(av[2], inside=inside or unbounded):
                return True
        elif op == _C.POSSESSIVE_REPEAT:
            if _nested_repeat(av[2], inside=False):
                return True
        elif op == _C.ATOMIC_GROUP:
            if _nested_repeat(av, inside=False):
                return True
        elif any(_nested_repeat(part, inside=inside) for part in _parts(op, av)):
            return True
    return False


def _parts(op: Any, av: Any) -> list[Any]:
    """The sub-patterns of a group, an alternation, a lookaround or a conditional."""
    if op == _C.SUBPATTERN:
        return [av[3]]
    if op == _C.BRANCH:
        return list(av[1])
    if op in (_C.ASSERT, _C.ASSERT_NOT):
        return [av[1]]
    if op == _C.GROUPREF_EXISTS:
        return [p for p in av[1:] if p is not None]
    return []


@lru_cache(maxsize=1024)
def _compiled(pattern: str, flags: int) -> regex.Pattern[str]:
    # VERSION0 whatever regex.DEFAULT_VERSION says: `re`'s semantics (simple case folding,
    # no nested sets).
    return regex.compile(pattern, flags | regex.VERSION0)


def compiled_pattern(pattern: str, flags: int = 0, *, field: str = "pattern") -> regex.Pattern[str]:
    """A pattern compiled for budgeted matching (`flags` as `re`'s: the values are the same).

    Loading refuses an unusable pattern; one that still fails here (a file changed under a
    running sweep) is the scenario's fault: SpecError naming `field`."""
    try:
        return _compiled(pattern, flags)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise SpecError("scenario", field, f"invalid regular expression: {exc}") from None


def budgeted_search(
    pattern: str, text: str, *, field: str, flags: int = 0
) -> regex.Match[str] | None:
    """`re.search`, within the budget; PatternTimeout naming `field` past it."""
    try:
        return compiled_pattern(pattern, flags, field=field).search(text, timeout=MATCH_BUDGET_S)
    except TimeoutError:
        raise PatternTimeout(field, pattern, len(text)) from None


def budgeted_fullmatch(
    pattern: str, text: str, *, field: str, flags: int = 0
) -> regex.Match[str] | None:
    """`re.fullmatch`, within the budget; PatternTimeout naming `field` past it."""
    try:
        return compiled_pattern(pattern, flags, field=field).fullmatch(text, timeout=MATCH_BUDGET_S)
    except TimeoutError:
        raise PatternTimeout(field, pattern, len(text)) from None


def budgeted_finditer(
    pattern: str, text: str, *, field: str, flags: int = 0
) -> list[regex.Match[str]]:
    """Every match `re.finditer` gives, the whole scan within the budget; PatternTimeout
    naming `field` past it."""
    found = compiled_pattern(pattern, flags, field=field)
    try:
        return list(found.finditer(text, timeout=MATCH_BUDGET_S))
    except TimeoutError:
        raise PatternTimeout(field, pattern, len(text)) from None
