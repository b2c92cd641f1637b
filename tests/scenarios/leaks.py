"""The self-checks' leak probe: does state seeded into a server reach the next trial?

A scenario's ideal agent runs on a warm runtime three times: without the scenario's setup,
with it, and without it again. What the servers answered the first and the last time must be
the same; a difference is the seed (or the seeded trial's writes) showing through, which
`reuse: false`, a `sandbox:` or a declared `reset:` promised could not happen.

The first trial establishes the clean state only if the seed then makes a difference: when the
seeded trial gets the same answers as the one before it, the seed was already there (a server
that keeps state past its claimed reset, from an earlier run) or cannot be seen, and the probe
says it cannot decide instead of passing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mcp_farm.scenarios import load_suite
from mcp_farm.scenarios.catalog import suite_path
from mcp_farm.schema import (
    Scenario,
    Settings,
    TrialResult,
    TrialSpec,
)
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import (
    ideal_script,
    trial,
)

UNSEEDED = ".unseeded"


def with_unseeded_twin(suite: str, scenario_id: str, folder: Path) -> str:
    """A copy of the suite in `folder` that also holds the scenario without its setup (id
    ending `.unseeded`); sandboxes named by a relative path keep pointing where they did."""
    source = suite_path(suite)
    data: dict[str, Any] = yaml.safe_load(source.read_text(encoding="utf-8"))
    for server in data.get("servers", []):
        sandbox = server.get("sandbox")
        if isinstance(sandbox, str) and sandbox.startswith(("./", "../")):
            server["sandbox"] = str((source.parent / sandbox).resolve())
    original = next(s for s in data["scenarios"] if s["id"] == scenario_id)
    twin = {k: v for k, v in original.items() if k != "setup"} | {"id": scenario_id + UNSEEDED}
    data["scenarios"].append(twin)
    copy = folder / f"{source.stem}-leak-probe.yaml"
    copy.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return str(copy)


def _answers(result: TrialResult) -> list[tuple[str, bool, str]]:
    return [(c.tool, c.ok, c.result_text) for c in result.tool_calls]


def leak_problem(
    suite: str, scenario: Scenario, runtime: Runtime, settings: Settings, folder: Path
) -> str | None:
    """Why the scenario's seed reached a later trial, or None when it did not."""
    probe = with_unseeded_twin(suite, scenario.id, folder)
    loaded = {s.id: s for s in load_suite(probe).scenarios}
    seeded, unseeded = loaded[scenario.id], loaded[scenario.id + UNSEEDED]
    script = ideal_script(scenario)
    runs: list[TrialResult] = []
    for repetition, which in enumerate((unseeded, seeded, unseeded)):
        spec = trial(which, script, suite=probe, repetition=repetition)
        if which.user_sim is not None:
            # A card's scenario runs in the no-user arm here: its ideal calls need no user.
            spec = TrialSpec.model_validate(
                spec.model_dump(exclude={"trial_id"}) | {"user_arm": "no_user"}
            )
        runs.append(runtime.run(spec, settings))
    if runs[1].outcome == "infra_error":
        return f"{scenario.id}: the seeded trial could not run: {runs[1].detail}"
    before, seeded_answers, after = (_answers(run) for run in runs)
    if before == seeded_answers:
        # The clean state was not clean, or the seed shows nowhere: either way a trial after
        # the seeded one would look the same whether or not the seed leaks.
        return (
            f"{scenario.id}: the probe cannot decide: the trial before the seeded one got "
            "the same answers as the seeded one, so the seed was there before the probe "
            "seeded it (an earlier trial or run left it, and the server's reset did not clear "
            "it) or the ideal agent's calls do not show it"
        )
    for was, now in zip(before, after, strict=False):
        if was != now:
            return (
                f"{scenario.id}: a trial after a seeded one got a different answer from "
                f"{now[0]}: {was[2][:120]!r} before the seeded trial, {now[2][:120]!r} after"
            )
    if len(before) != len(after):
        return f"{scenario.id}: a trial after a seeded one made a different number of calls"
    return None
