"""Which of a sweep's trials to list, and in what order: one filter for the web pages and the
terminal, read strictly from query parameters or command options."""

from __future__ import annotations

import unicodedata
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, ValidationError

from mcp_farm.schema import FarmError, Outcome, Tier, TrialStatus
from mcp_farm.schema.parse.strict import Strict

Wording = Literal["verbatim", "paraphrased"]
Sort = Literal["scenario", "slowest", "fastest", "newest"]
YesNo = Literal["yes", "no"]

PAGE_SIZE = 50
NUMBERED_PAGES = 200
"""How deep a page opens by its number alone (an index read of up to 10,000 rows to skip);
deeper pages open from the page before, whose link says where to start (`after`)."""


MAX_CHARS = 500
"""The longest text value a filter or an id takes: longer than any id the farm writes and any
phrase worth searching for, short of SQLite's LIKE pattern limit (50,000 bytes)."""
SHOWN_CHARS = 60
"""How much of a refused value an error message quotes: one line, whatever was sent."""
REFUSED_CATEGORIES = frozenset({"Cc", "Cs"})
"""Control characters (NUL among them: PostgreSQL refuses it in any text) and lone surrogates
(no encoding writes them): no id, name or searched text of the farm's contains one."""


class FilterError(FarmError):
    """A trial filter with an unknown field, a value outside its vocabulary, or text no id or
    detail contains (a control character, more than MAX_CHARS characters)."""


def quoted(value: str) -> str:
    """`value` as an error message quotes it: repr, cut to SHOWN_CHARS characters."""
    if len(value) <= SHOWN_CHARS:
        return repr(value)
    return f"{value[:SHOWN_CHARS]!r}… ({len(value):,} characters)"


def text_problem(value: str) -> str | None:
    """Why `value` can be no id, name or searched text of the farm's, or None when it can."""
    if len(value) > MAX_CHARS:
        return f"longer than {MAX_CHARS} characters"
    for ch in value:
        if unicodedata.category(ch) in REFUSED_CATEGORIES:
            return f"holds the control character U+{ord(ch):04X}"
    return None


def checked_text(value: str, *, name: str, source: str = "query") -> str:
    """`value` (a path's id, a command's argument) as given, or a FilterError in one line that
    says why no trial, sweep or detail can match it."""
    problem = text_problem(value)
    if problem is not None:
        raise FilterError(f"{source}: {name}={quoted(value)}: {problem}")
    return value


def _plain(value: str) -> str:
    problem = text_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


Text = Annotated[str, AfterValidator(_plain)]
"""A filter's free text: an id, a name or a searched phrase (see text_problem)."""


class TrialFilter(Strict):
    """A selection of one sweep's trials. Every field left out selects everything."""

    model: Text | None = None
    """The model id."""
    config: Text | None = None
    """The configuration label beside the model, as the scorecard prints it: the prompt config,
    and `+TOOLSET` when the trial ran with a tool set (`native+symbols`)."""
    scenario: Text | None = None
    """The scenario id."""
    tier: Tier | None = None
    tool: Text | None = None
    """A tool the scenario expects (the scorecard's per-tool rows group on these)."""
    wording: Wording | None = None
    """`verbatim` (the scenario's own prompt) or `paraphrased` (one of its paraphrases)."""
    outcome: Outcome | None = None
    status: TrialStatus | None = None
    first_try: YesNo | None = None
    """Whether the trial passed at the first try (no wrong or repeated call)."""
    route: Text | None = None
    """The route of a scenario with routes that the trial took, or was judged by."""
    left_cassette: YesNo | None = None
    """Whether the trial called a replayed server off its cassette."""
    other_path: YesNo | None = None
    """Among trials with state probes: `yes`, their state passed while their calls did not
    (docs/state.md); `no`, the others with probes. Trials without probes are neither."""
    graded: YesNo | None = None
    """`yes`: the trials the scorecard's rates count (done, and neither an infra nor a harness
    error); `no`: the others (not run yet, or an infra or harness error)."""
    scoring: Text | None = None
    """Only trials with an answer score in this scoring pass."""
    search: Text | None = None
    """Text the grader's detail contains (any case)."""
    sort: Sort = "scenario"
    """`scenario` (configuration, scenario, repetition), `slowest`, `fastest` or `newest`."""
    page: int = Field(default=1, ge=1)
    """The page's number; with `after` or `before`, only its label (the rows start from there)."""
    after: Text | None = None
    """The trial id the page starts after, in the chosen order (a next › link sets it)."""
    before: Text | None = None
    """The trial id the page ends before (a ‹ previous link sets it)."""

    @classmethod
    def read(cls, given: dict[str, str], *, source: str = "query") -> TrialFilter:
        """The filter from text values (a query string, command options); empty ones are
        left out. A FilterError names the field and the value it refused."""
        values = {k: v for k, v in given.items() if v not in ("", None)}
        try:
            found = cls.model_validate(values)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "?"
            value = str(values.get(field, ""))
            said = str(first["msg"]).removeprefix("Value error, ")
            raise FilterError(
                f"{source}: {field}={quoted(value)}: {said}"
                if field in values
                else f"{source}: {field}: {said}"
            ) from None
        if found.after is not None and found.before is not None:
            raise FilterError(f"{source}: after and before: give one or the other")
        if found.page > NUMBERED_PAGES and found.after is None and found.before is None:
            raise FilterError(
                f"{source}: page={found.page}: pages past {NUMBERED_PAGES} open from the page "
                "before them (its next link says where to start); narrow the filter, or sort "
                "the other way to start from the end"
            )
        return found

    def prompt_and_toolset(self) -> tuple[str, str] | None:
        """The configuration label split back into prompt config and tool set."""
        if self.config is None:
            return None
        prompt, _, toolset = self.config.partition("+")
        return prompt, toolset

    def query(self, **changes: str | int | None) -> dict[str, str]:
        """The filter as query parameters (defaults left out), with `changes` on top; a
        change to anything but the page starts again at page 1, from its start."""
        values = self.model_dump(exclude_defaults=True)
        if "page" not in changes:
            values.pop("page", None)
        # Where a page starts belongs to that page only: a link sets it anew or leaves it out.
        values.pop("after", None)
        values.pop("before", None)
        values.update(changes)
        return {k: str(v) for k, v in values.items() if v is not None and v != ""}
