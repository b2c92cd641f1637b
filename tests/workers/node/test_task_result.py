"""What Flower shows in its result column for a trial: the outcome, not only SUCCESS."""

from __future__ import annotations

from mcp_farm.schema.tasks.messages import TrialDone, TrialHeld, TrialRetry, TrialSkipped
from mcp_farm.workers.node.celery_app import (
    RESULT_CHARS,
    task_result,
)

BASE = {"trial_id": "t" * 64, "sweep_id": "sw"}
# The summaries are typed messages; the dicts below are their fields.


def test_a_failed_trial_reads_as_its_outcome_and_time() -> None:
    summary = TrialDone(**BASE, outcome="wrong_tool", latency_s=7.23, last=False)
    assert task_result(summary) == "wrong_tool · 7.2 s"


def test_the_last_trial_of_a_sweep_says_so() -> None:
    summary = TrialDone(**BASE, outcome="pass", latency_s=1.36, last=True)
    assert task_result(summary) == "pass · 1.4 s · last of sweep"


def test_a_trial_that_could_not_run_has_an_outcome_but_no_time() -> None:
    assert task_result(TrialDone(**BASE, outcome="infra_error", last=False)) == "infra_error"


def test_a_duplicate_delivery_reads_as_skipped_with_its_reason() -> None:
    assert (
        task_result(TrialSkipped(**BASE, reason="already recorded")) == "skipped: already recorded"
    )
    assert task_result(TrialSkipped(**BASE, reason="cancelled")) == "skipped: cancelled"


def test_held_and_retrying_trials_say_why_in_one_short_line() -> None:
    held = task_result(TrialHeld(**BASE, reason="another live process is running it"))
    assert held == "held: another live process is running it"
    retry = task_result(TrialRetry(**BASE, problem="endpoint answered 500: " + "x" * 500))
    assert retry.startswith("retrying: endpoint answered 500") and len(retry) == RESULT_CHARS
