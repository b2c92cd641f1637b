"""Task messages between processes: every payload and result a task takes or gives, typed.

The scheduler and the workers meet only here and in the broker's queue names. A payload is
dumped to JSON on the way out (`model_dump(mode="json")`) and read back with `read_message` on
the way in, so a message that does not fit its task is a clear `MessageError` naming the task,
never a KeyError deep inside it. A trial's payload is its `TrialSpec`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from mcp_farm.schema.errors import MessageError
from mcp_farm.schema.specs import (
    JudgeSettings,
    Suite,
    UserModel,
)
from mcp_farm.schema.trial import TrialSpec
from mcp_farm.schema.vocab import Outcome


class TaskMessage(BaseModel):
    """Base of every message: unknown fields are errors, and a message never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# ---- payloads -------------------------------------------------------------------------------


class AggregateRequest(TaskMessage):
    """`farm.aggregate`: build and store the scorecard of one sweep."""

    sweep_id: str


class RequeueRequest(TaskMessage):
    """`farm.requeue_orphans`: find trials whose worker died; give them back when `act`."""

    act: bool = True


class RescoreRequest(TaskMessage):
    """`farm.rescore_trial`: grade one recorded trial again and score its answer."""

    trial_id: str
    scoring_id: str
    judge: JudgeSettings


class AnchorJudgingRequest(TaskMessage):
    """`farm.judge_anchors`: let the judge score a folder's anchor answers."""

    folder: str
    rubric: str | None = None
    judge: JudgeSettings


class SuiteToCheck(TaskMessage):
    """One parsed suite and the file it came from."""

    source: str
    suite: Suite


class CallCheckRequest(TaskMessage):
    """`farm.check_calls`: check each suite's example calls against the steps' own matchers
    and, when `start_servers`, its tool names and matcher shapes against the tools its servers
    list (each server started once, whichever suites use it)."""

    suites: list[SuiteToCheck]
    start_servers: bool = True


# ---- results --------------------------------------------------------------------------------


class TrialDone(TaskMessage):
    """The trial ran and its result is recorded."""

    status: Literal["done"] = "done"
    trial_id: str
    sweep_id: str
    outcome: Outcome
    latency_s: float | None = None
    model_s: float | None = None
    last: bool = False
    """No trial of the sweep is left to run: time to build its scorecard."""


class TrialSkipped(TaskMessage):
    """Not run: already recorded, or its sweep was cancelled."""

    status: Literal["skipped"] = "skipped"
    trial_id: str
    sweep_id: str
    reason: str


class TrialHeld(TaskMessage):
    """Not run: another live process holds the trial (a duplicate message)."""

    status: Literal["held"] = "held"
    trial_id: str
    sweep_id: str
    reason: str


class TrialRetry(TaskMessage):
    """An infrastructure failure, not recorded as final: the caller may try again."""

    status: Literal["retry"] = "retry"
    trial_id: str
    sweep_id: str
    problem: str


TrialSummary = Annotated[
    TrialDone | TrialSkipped | TrialHeld | TrialRetry, Field(discriminator="status")
]
"""What `farm.run_trial` gives back, told apart by `status`."""


class AggregateResult(TaskMessage):
    sweep_id: str
    done: int
    total: int


class RequeueResult(TaskMessage):
    lapsed: int
    """Running trials whose lease lapsed (their worker stopped renewing it)."""
    requeued: int
    """Trials of dead workers given back to their queues: lapsed running trials, and pending
    trials whose message a dead worker had taken unacknowledged."""
    lost: int = 0
    """Pending trials whose message the broker held nowhere (popped by a worker killed while
    Redis handed it over), published again: no worker is known dead for them."""


class ProbeRegrade(TaskMessage):
    """One state probe of a rescored trial whose verdict the probes as now written changed."""

    label: str
    """The probe's name (ProbeResult.label)."""
    turn: int | None
    """The user turn it ran after (0-based); None: at the end of the trial."""
    passed_before: bool
    """Its recorded verdict."""
    passed_now: bool
    """Its verdict judged again now, from the value it recorded."""

    @property
    def where(self) -> str:
        """How a report names it: `probe 'x'` or `turn 2 probe 'x'`."""
        probe = f"probe {self.label!r}"
        return probe if self.turn is None else f"turn {self.turn + 1} {probe}"

    @property
    def change(self) -> str:
        """`passed → failed` or `failed → passed`."""
        word = {True: "passed", False: "failed"}
        return f"{word[self.passed_before]} → {word[self.passed_now]}"


class RescoreResult(TaskMessage):
    trial_id: str
    outcome: Outcome
    """The outcome graded again now (it may differ from the recorded one after a grader change)."""
    recorded_outcome: str | None
    fairness: float | None
    probes: list[ProbeRegrade] = Field(default_factory=list)
    """The trial's state probes whose verdict changed when judged again (in the order run)."""


class AnchorJudgingResult(TaskMessage):
    judge: str
    scores: dict[str, dict[str, float | None]]
    """Anchor id → criterion → the mean of the judge's runs (None: no readable score)."""
    unreadable: int
    judge_s: float


class SpecProblem(TaskMessage):
    """A problem in a spec file, as a `SpecError` names it."""

    source: str
    field: str
    problem: str


class CallCheckResult(TaskMessage):
    problems: list[SpecProblem]
    """Every problem found, suite by suite in the request's order."""
    servers_started: int
    notes: list[SpecProblem] = Field(default_factory=list)
    """What is worth knowing but does not make the suite wrong (a server that writes stray
    lines to stdout yet works), once per server."""


class UserCalibrationRequest(TaskMessage):
    """Ask a sweep's user model the calibration's canned agent questions."""

    user: UserModel


class CalibrationReply(TaskMessage):
    question: str
    """The canned agent reply the user model answered."""
    reply: str
    """What the user model wrote (its stop marker and what follows taken off)."""
    problems: list[str]
    """The user errors the reply would be (`off_script: …`, `invented: …`); empty: it played
    the user."""


class UserCalibrationResult(TaskMessage):
    model_id: str
    replies: list[CalibrationReply]

    @property
    def passed(self) -> bool:
        """Every reply played the user."""
        return all(not r.problems for r in self.replies)

    def line(self) -> str:
        """One line for a person: how many replies failed and the first failure."""
        bad = [r for r in self.replies if r.problems]
        if not bad:
            return (
                f"user model {self.model_id} passed the calibration ({len(self.replies)} replies)"
            )
        return (
            f"user model {self.model_id} failed the simulated-user calibration: {len(bad)} of "
            f"{len(self.replies)} replies did not play the user (first: {bad[0].problems[0]}; "
            f"it wrote {bad[0].reply[:80]!r})"
        )


# ---- reading --------------------------------------------------------------------------------

PAYLOADS: dict[str, Any] = {
    "farm.run_trial": TrialSpec,
    "farm.aggregate": AggregateRequest,
    "farm.requeue_orphans": RequeueRequest,
    "farm.rescore_trial": RescoreRequest,
    "farm.judge_anchors": AnchorJudgingRequest,
    "farm.check_calls": CallCheckRequest,
    "farm.calibrate_user": UserCalibrationRequest,
}
RESULTS: dict[str, Any] = {
    "farm.run_trial": TrialSummary,
    "farm.aggregate": AggregateResult,
    "farm.requeue_orphans": RequeueResult,
    "farm.rescore_trial": RescoreResult,
    "farm.judge_anchors": AnchorJudgingResult,
    "farm.check_calls": CallCheckResult,
    "farm.calibrate_user": UserCalibrationResult,
}

M = TypeVar("M")


def _read(kind: str, task: str, shape: Any, data: Any) -> Any:
    if isinstance(data, BaseModel) and isinstance(shape, type) and isinstance(data, shape):
        return data  # already the model: built and validated in this process
    try:
        return TypeAdapter(shape).validate_python(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(message)'}: {e['msg']}" for e in exc.errors()
        )
        raise MessageError(task, f"the {kind} does not fit: {problems}") from None


def read_message(task: str, data: Any, shape: type[M]) -> M:
    """`data` (JSON from the broker, or already the model) as the payload of `task`."""
    if PAYLOADS.get(task) is not shape:
        raise MessageError(task, f"takes a {PAYLOADS.get(task)}, not a {shape.__name__}")
    message: M = _read("payload", task, shape, data)
    return message


def read_result(task: str, data: Any, shape: type[M]) -> M:
    """`data` (JSON, or already the model) as the result of `task`."""
    if RESULTS.get(task) is not shape:
        raise MessageError(task, f"gives a {RESULTS.get(task)}, not a {shape.__name__}")
    result: M = _read("result", task, shape, data)
    return result


def read_summary(data: Any) -> TrialDone | TrialSkipped | TrialHeld | TrialRetry:
    """A `farm.run_trial` result: one of the `TrialSummary` kinds."""
    summary: TrialDone | TrialSkipped | TrialHeld | TrialRetry = _read(
        "result", "farm.run_trial", TrialSummary, data
    )
    return summary
