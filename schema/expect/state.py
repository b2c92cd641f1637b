"""Expected world state: `state:` probes, `grade_by`, and the verdicts they give (docs/state.md)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from mcp_farm.schema.expect.matchers import ParamMatcher
from mcp_farm.schema.parse.strict import Strict

GradeBy = Literal["calls", "state", "both"]
"""What decides a trial's outcome: its calls (the steps), its `state:` probes, or both. Left
out: `calls` where no probe is written, `both` where one is."""

ProbeRead = Literal["text", "json", "structured"]
"""How a read call's result becomes the value a probe judges: its text, its text decoded as
JSON, or its `structuredContent`."""

ProbeKind = Literal["call", "snapshot", "file", "sqlite"]

_SELECT = re.compile(r"^\s*(select|with)\b", re.IGNORECASE)


class StateProbe(Strict):
    """One look at a server's state, and what must be found there (`state:` of a scenario or
    a turn). Give exactly one of `tool` (a read call), `snapshot: true` (the fixture server's
    hidden snapshot document), `file` (a file or folder in the server's sandbox) or `sqlite`
    (a SQLite file in the sandbox, with `query`)."""

    server: str | None = None
    """The attached server to look at; may be left out when the scenario attaches one server
    (or, for `tool`, when one attached server lists it)."""
    tool: str | None = None
    """A read call the farm makes: the tool's name as the server lists it."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The read call's arguments."""
    read: ProbeRead = "text"
    """How the read call's result is judged: `text`, `json` (the text decoded) or
    `structured` (its `structuredContent`)."""
    snapshot: bool = False
    """The fixture server's state as a document, from its hidden `farm_snapshot` tool."""
    file: str | None = None
    """A path inside the server's sandbox: a file gives its text, a folder the sorted names
    of its entries (a sub-folder's with a trailing `/`), a missing path `null`."""
    sqlite: str | None = None
    """A SQLite file inside the server's sandbox, opened read-only."""
    query: str | None = None
    """With `sqlite`: one SELECT; its rows, each a list of column values."""
    at: str | None = None
    """A JSON path (`notes[0].body`, `rows[1]`) to the part of the value that is judged;
    a path that leads nowhere finds `null`."""
    expect: ParamMatcher
    """What the value (or the part `at` names) must be: any matcher a step's argument takes
    (a bare value is `exact`)."""
    label: str = ""
    """How the probe is named in verdicts; left out, one is made from what it looks at."""

    @model_validator(mode="before")
    @classmethod
    def _bare_expect(cls, data: Any) -> Any:
        if isinstance(data, dict) and "expect" in data and not isinstance(data["expect"], dict):
            return data | {"expect": {"exact": data["expect"]}}
        return data

    @model_validator(mode="after")
    def _one_kind(self) -> StateProbe:
        given = [k for k, on in (("tool", self.tool), ("snapshot", self.snapshot)) if on] + [
            k for k in ("file", "sqlite") if getattr(self, k) is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of `tool`, `snapshot: true`, `file` and `sqlite` "
                f"(got {', '.join(given) or 'none'})"
            )
        if self.tool is None and (self.arguments or self.read != "text"):
            raise ValueError("`arguments` and `read` are for a `tool` probe (a read call)")
        if (self.sqlite is None) != (self.query is None):
            raise ValueError("`sqlite` and `query` go together")
        if self.query is not None and (
            not _SELECT.match(self.query) or ";" in self.query.strip().rstrip(";")
        ):
            raise ValueError("`query` must be one SELECT (the file is opened read-only)")
        for where, path in (("file", self.file), ("sqlite", self.sqlite)):
            if path is not None and (path.startswith("/") or ".." in path.split("/")):
                raise ValueError(f"`{where}` is a path inside the sandbox: relative, no `..`")
        for below, m in self.expect.nested():
            if m.derived_from_step is not None or m.from_turn is not None:
                raise ValueError(f"expect{below}: a probe cannot take a value from a step")
        return self

    @property
    def kind(self) -> ProbeKind:
        if self.tool is not None:
            return "call"
        if self.snapshot:
            return "snapshot"
        return "file" if self.file is not None else "sqlite"

    @property
    def name(self) -> str:
        """The label, or one made from what the probe looks at."""
        if self.label:
            return self.label
        where = f"{self.server}." if self.server else ""
        if self.tool is not None:
            args = ", ".join(f"{k}={v!r}" for k, v in self.arguments.items())
            shown = f"{where}{self.tool}({args})"
        elif self.snapshot:
            shown = f"{where}snapshot"
        elif self.file is not None:
            shown = f"{where}file {self.file}"
        else:
            shown = f"{where}sqlite {self.sqlite}: {self.query}"
        return f"{shown} at {self.at}" if self.at else shown


SetBack = Literal["restored", "copied_back", "untouched", "cannot", "left"]
"""What the farm did to one attached server after a failed turn under `continue`, graded by
state (docs/state.md): `restored` (its hidden `farm_restore` put the kept document back),
`copied_back` (its sandbox folder copied back in place), `untouched` (no way back, and the
model made no call to it in the turn: nothing to undo), `cannot` (no way back, and the model
called it), `left` (it could be set back, and was left as the model's calls made it, because
another server was `cannot`: all servers are set back, or none)."""

DivergedBy = Literal["model", "farm"]
"""Whose doing a diverged turn's starting state was: `model` (a failed turn before it could
not be set back, so the model's calls there stayed), `farm` (every server was set back and
every expected call made, and the probes still did not fit: the scenario's expected calls do
not reach the state its probes ask for, or a server did not put its state back)."""


class ProbeResult(BaseModel):
    """One probe as the farm ran it: what it expected, what it found, and whether that fits."""

    version: int = 1
    """Version of this record's shape."""
    turn: int | None = None
    """The turn (0-based) after which it ran; None: at the end of the trial."""
    label: str
    """The probe's name (StateProbe.name)."""
    kind: ProbeKind
    expected: str
    """The matcher, as JSON."""
    found: str
    """All of the value found, as JSON, never cut (with `at:`, the whole value the probe read,
    not only that part), so `farm rescore` can judge it again with a changed matcher or path;
    the trial page shows its first 2,000 characters. A marker (`workers/state.py`,
    `UNREADABLE`) when it could not be read as asked."""
    problem: str | None = None
    """None: the value fits; else why not, in words."""

    @property
    def passed(self) -> bool:
        return self.problem is None


class StateVerdict(BaseModel):
    """How a trial's state and calls compared (None on a trial with no probes)."""

    version: int = 1
    """Version of this record's shape."""
    grade_by: GradeBy
    """What decided the outcome."""
    passed: bool
    """Every probe fit."""
    calls_passed: bool
    """The calls alone passed (the outcome a calls-only grade would give was `pass`, or
    `output_mismatch`: the tools were right)."""
    calls_outcome: str
    """The outcome the calls alone gave."""
    other_path: bool = False
    """The state passed and the calls did not: another path reached the expected state
    (recorded beside the outcome, which `grade_by` decides; docs/state.md). Never where the
    farm set a turn back, made calls of its own or a turn diverged, nor where neither the
    model's calls nor the expected ones could change anything (a read-only trial's probes
    only say nothing changed)."""
    diverged: list[int] = Field(default_factory=list)
    """Turns (0-based) that started from a state the probes found diverged after a failed
    turn before them was continued (whose doing: `diverged_by`)."""
    diverged_by: dict[int, DivergedBy] = Field(default_factory=dict)
    """Per diverged turn, whose doing its starting state was (DivergedBy)."""
    restored: list[int] = Field(default_factory=list)
    """Failed turns (0-based) whose state the farm set back before `continue` went on."""
    probes: list[ProbeResult] = Field(default_factory=list)
    """Every probe run, after each turn and at the end."""
