"""What the steps of a scenario found, and which call takes the blame for a step none met.

With several steps of one tool, the call that did one step fails the others' matchers; naming
it would blame the wrong call. So a wrong call is judged against an unmet step only when it is
free: the other steps can each still have a call of their own without it, and it is no exact
repeat of a call that did another step. When no call is free, the step was never called.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp_farm.schema import (
    ExpectedCall,
    ToolCallRecord,
)
from mcp_farm.workers.model.safejson import arguments_key


@dataclass
class Findings:
    """What the steps found, first problem of each kind."""

    params: str | None = None
    sequence: str | None = None
    failed: str | None = None
    met: dict[int, list[ToolCallRecord]] = field(default_factory=dict)
    """Per step, the calls that meet it."""
    errored: set[int] = field(default_factory=set)
    """Steps whose only fitting calls came back as errors (or worked, under expect_error)."""
    late: dict[int, str] = field(default_factory=dict)
    """Steps with a call whose chained value came from a result obtained only after it."""
    blame: dict[int, tuple[str, list[tuple[ToolCallRecord | None, str]]]] = field(
        default_factory=dict
    )
    """Unmet steps: the kind of problem, and each call judged against the step with its
    problem (noted in step order once every step's calls are known)."""
    placed: dict[int, int] = field(default_factory=dict)
    """When every step could be placed: per step, the index of the one call that does it."""

    @property
    def steps_met(self) -> int:
        """Steps some call met: how far a trial got."""
        return sum(1 for met in self.met.values() if met)

    def note(self, kind: str, problem: str) -> None:
        if getattr(self, kind) is None:
            setattr(self, kind, problem)

    def defer(self, j: int, kind: str, problem: str) -> None:
        """A problem of step j that names no call, noted in step order with the others."""
        self.blame[j] = (kind, [(None, problem)])


def assign_blame(steps: list[ExpectedCall], found: Findings) -> None:
    """Note each unmet step's problem, in step order (see the module doc)."""
    taken = {c.index for met in found.met.values() for c in met}
    for j, (kind, judged) in sorted(found.blame.items()):
        if kind != "params":
            own = [problem for c, problem in judged if c is None or c.index not in taken]
            found.note(kind, (own or [judged[0][1]])[0])
            continue
        paired = _matching(_options(found, j))
        free = [(c, why) for c, why in judged if c is None or _free(j, c, found, len(paired))]
        if not free:
            found.note("sequence", f"step {j} ({steps[j].label}) never called: {_did(found, j)}")
            continue
        # The likelier attempt at this step: a call the other steps' pairing leaves over,
        # then one that did no other step.
        found.note(kind, min(free, key=lambda f: _rank(f[0], set(paired), taken))[1])


def _did(found: Findings, j: int) -> str:
    """Which steps the calls judged against step j did instead, in words."""
    doers = {c.index: k for k, met in sorted(found.met.items(), reverse=True) for c in met}
    named = [
        f"call {c.index} did step {doers[c.index]}"
        for c, _why in found.blame[j][1]
        if c is not None and c.index in doers
    ]
    return "; ".join(named[:3]) or "its calls did other steps"


def _rank(call: ToolCallRecord | None, paired: set[int], taken: set[int]) -> tuple[bool, bool]:
    if call is None:
        return (False, False)
    return (call.index in paired, call.index in taken)


def _options(found: Findings, j: int, leave_out: int | None = None) -> dict[int, list[int]]:
    """Per step other than j that some call met, the indexes of its calls (less one)."""
    return {
        k: [c.index for c in met if c.index != leave_out]
        for k, met in found.met.items()
        if k != j and met
    }


def _free(j: int, call: ToolCallRecord, found: Findings, pairs: int) -> bool:
    """Whether `call` may be blamed for step j: no repeat of a call that did another step,
    and not needed for the other steps' `pairs` (each with a call of its own)."""
    key = arguments_key(call.tool, call.arguments)
    others = [c for k, met in found.met.items() if k != j for c in met]
    if any(c.index != call.index and arguments_key(c.tool, c.arguments) == key for c in others):
        return False
    return len(_matching(_options(found, j, leave_out=call.index))) == pairs


def _matching(options: dict[int, list[int]]) -> dict[int, int]:
    """A largest set of steps that can each have a distinct call of their own (order aside),
    earlier calls first: call index to step, found by augmenting paths."""
    owner: dict[int, int] = {}

    def claim(step: int, seen: set[int]) -> bool:
        for index in options[step]:
            if index in seen:
                continue
            seen.add(index)
            if index not in owner or claim(owner[index], seen):
                owner[index] = step
                return True
        return False

    for step in options:
        claim(step, set())
    return owner
