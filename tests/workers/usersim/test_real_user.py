"""The bundled local model as the simulated user, end to end (embedded): the trial completes,
the user's messages reach the agent, and the user's tokens, identity and errors are recorded
apart from the agent's. Slow (a real model); CI runs it. It checks the plumbing, not how
well a 270M-parameter model plays a user."""

from __future__ import annotations

import anyio
import pytest

from mcp_farm.scenarios import find_scenario
from mcp_farm.schema import UNGRADED, ModelTarget, Settings, TrialSpec, UserModel
from mcp_farm.workers.trial import execute_trial
from tests.helpers import trial
from tests.workers.model.test_real_models import _needs_llama
from tests.workers.usersim.test_simulated_user import IDEAL

pytestmark = [pytest.mark.slow, pytest.mark.integration]

DENTIST = "usersim.dentist-ask-time"


def test_the_bundled_model_plays_the_user_of_a_recorded_conversation(settings: Settings) -> None:
    _needs_llama()
    agent, _user = IDEAL[DENTIST]
    gemma = ModelTarget(id="gemma-user", adapter="local", model="gemma3-270m")
    user = UserModel(model=gemma, temperature=0.0, seed=3, max_tokens=48)
    spec = trial(find_scenario("usersim", DENTIST), agent, suite="usersim")
    spec = TrialSpec.model_validate(
        spec.model_dump(exclude={"trial_id"}) | {"user": user.model_dump()}
    )
    result = anyio.run(execute_trial, spec, settings)
    assert result.outcome not in UNGRADED, result.detail
    record = result.user_sim
    assert record is not None
    assert record.tokens.prompt > 0 and record.tokens.completion > 0
    assert record.identity.pins["chat_format"] == "gemma"
    assert (record.identity.model_id, record.identity.seed) == ("gemma-user", 3)
    # The agent is scripted: 8 completion tokens a reply of its script (none once it has run
    # out), whatever the user cost.
    assert result.tokens.completion == 8 * min(result.turns, len(agent))
    said = [m.content for m in result.transcript if m.role == "user"]
    assert said[0] == find_scenario("usersim", DENTIST).user_sim.opening  # type: ignore[union-attr]
    assert record.ended == "user_stop" or len(said) >= 2
    assert result.failure_source in ("agent", "user", "none")
    # A user that left at a bare stop marker left no message.
    assert all(e.said in said or (e.kind, e.said) == ("left_early", "") for e in record.errors)


def test_the_calibration_refuses_the_bundled_270m_model_as_a_user(settings: Settings) -> None:
    """The measurement behind README's word on which bundled model can play a user: at 270M
    parameters it echoes its instructions or talks past the question."""
    from mcp_farm.schema.tasks.messages import UserCalibrationRequest
    from mcp_farm.workers.usersim.calibrate import calibrate_user

    _needs_llama()
    gemma = ModelTarget(id="gemma-user", adapter="local", model="gemma3-270m")
    user = UserModel(model=gemma, temperature=0.0, seed=3, max_tokens=64)
    result = calibrate_user(UserCalibrationRequest(user=user), settings)
    print(*(f"{r.question} -> {r.reply!r} {r.problems}" for r in result.replies), sep="\n")
    assert not result.passed, result.line()
    assert result.line().startswith("user model gemma-user failed the simulated-user calibration")
