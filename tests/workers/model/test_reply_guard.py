"""A slow box is not a slow model: a model in the worker's own process has each reply bounded by
the CPU time of the thread generating it (and a hang guard for a thread that gets none), not by
the wall clock; every trial records the per-reply limit that applied and what it was measured
on. llama.cpp is stood in for by fakes that spend wall time or CPU time as a busy machine or a
runaway model would; the real model is exercised by the slow tests."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import Settings, TrialResult
from mcp_farm.workers.model.guard import ReplyGuard, ReplyStopped, guarded
from mcp_farm.workers.model.local import client as local
from mcp_farm.workers.trial import execute_trial
from tests.helpers import trial

ENVINFO = Path(__file__).resolve().parents[2] / "servers" / "envinfo.py"
CALL = '{"tool_call": {"name": "variable_digest", "arguments": {"name": "HOME"}}}'
ANSWER = '{"response": "done"}'


class FakeLlama:
    """Gives the replies in `texts`, one a completion, spending `wait_s` of wall time (a thread
    waiting to be scheduled on a busy machine) and `burn_s` of CPU time per token, and checking
    the reply's limit at every token as the real model does."""

    guard: ReplyGuard | None = None

    def __init__(self, texts: list[str], wait_s: float = 0.0, burn_s: float = 0.0) -> None:
        self.texts, self.wait_s, self.burn_s = list(texts), wait_s, burn_s

    def reset(self) -> None:
        return None

    def create_chat_completion(self, **_: Any) -> dict[str, Any]:
        for _token in range(8):
            threading.Event().wait(self.wait_s)
            started = time.thread_time()
            while time.thread_time() - started < self.burn_s:
                pass
            if self.guard is not None:
                self.guard.check()
        text = self.texts.pop(0)
        return {
            "choices": [{"message": {"content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 8},
        }


def local_trial(
    tmp_path: Path,
    settings: Settings,
    fake: FakeLlama,
    monkeypatch: pytest.MonkeyPatch,
    **model: Any,
) -> TrialResult:
    gguf = tmp_path / "stand-in.gguf"
    gguf.write_bytes(b"")
    path = tmp_path / "envinfo.yaml"
    path.write_text(f"""
suite: envinfo
servers:
  - name: envinfo
    command: ["{{python}}", "{ENVINFO}"]
scenarios:
  - id: envinfo.digest
    version: 1
    tier: simple
    prompt: What is the digest of HOME?
    servers: [envinfo]
    expect:
      - tool: variable_digest
        params: {{name: HOME}}
""")
    monkeypatch.setattr(local, "_load", lambda *_args: fake)
    spec = trial(load_suite(str(path)).scenarios[0], [], suite=str(path))
    target = spec.model.model_copy(
        update={"adapter": "local", "model": str(gguf), "script": None, **model}
    )
    return anyio.run(execute_trial, spec.model_copy(update={"model": target}), settings)


def test_a_local_reply_slowed_by_a_busy_machine_is_not_a_timeout(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each reply takes 8 × 0.1 s of wall time against a 0.5 s limit, and almost no CPU time.
    fake = FakeLlama([CALL, ANSWER], wait_s=0.1)
    result = local_trial(tmp_path, settings, fake, monkeypatch, request_timeout_s=0.5)
    assert result.outcome == "pass", result.detail
    assert result.model_s is not None and result.model_s > 0.5
    pins = result.provenance
    assert (pins.request_timeout_s, pins.reply_limit_s, pins.reply_clock) == (0.5, 0.5, "cpu")


def test_a_local_reply_past_its_cpu_time_is_a_timeout_that_says_so(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 8 × 0.1 s of CPU time against 0.1 s × a time_scale of 2: stopped at a token.
    fake = FakeLlama([CALL, ANSWER], burn_s=0.1)
    result = local_trial(tmp_path, settings, fake, monkeypatch, request_timeout_s=0.1, time_scale=2)
    assert result.outcome == "timeout"
    assert result.stop_reason == "model_time_limit"
    assert result.detail == "the model's reply used more than 0.2 s of CPU time (turn 1)"
    assert result.provenance.reply_limit_s == pytest.approx(0.2)


def test_a_reply_whose_thread_gets_no_cpu_time_is_ended_as_hung() -> None:
    release = threading.Event()

    def hung(guard: ReplyGuard) -> str:
        guard.begin()
        release.wait(60)  # never comes back to check at a token, as a deadlock would not
        return "late"

    guard = ReplyGuard(limit_s=30, stall_s=0.3)
    try:
        assert anyio.run(guarded, hung, guard) is None
    finally:
        release.set()
    assert guard.reason == "the model's reply got no CPU time for 0.3 s (hung)"
    assert guard.stop.is_set()


def test_the_guard_counts_cpu_time_from_the_start_of_generation_not_the_wait_for_the_model() -> (
    None
):
    wall, cpu = [0.0], [7.0]
    guard = ReplyGuard(limit_s=1.0, stall_s=5.0, wall=lambda: wall[0], cpu=lambda: cpu[0])
    wall[0] = 100.0  # waiting for another trial's reply on the same model: not counted
    assert not guard.past_limit() and guard.used_s() is None
    guard.begin()
    wall[0], cpu[0] = 160.0, 7.5  # a minute of a busy machine, half a second of work
    assert not guard.past_limit()
    wall[0] = 164.0  # no work for 4 s: within the hang guard
    assert not guard.past_limit()
    wall[0] = 166.0
    assert guard.past_limit() and guard.reason.endswith("(hung)")
    guard = ReplyGuard(limit_s=1.0, stall_s=5.0, wall=lambda: wall[0], cpu=lambda: cpu[0])
    guard.begin()
    cpu[0] += 1.5
    with pytest.raises(ReplyStopped):
        guard.check()
    assert guard.reason == "the model's reply used more than 1 s of CPU time"


def test_every_trial_records_its_reply_limit_and_the_clock_it_ran_on(
    tmp_path: Path, settings: Settings
) -> None:
    from tests.workers.test_time_budget import CALL as SCRIPTED_CALL
    from tests.workers.test_time_budget import _run, _suite

    script = [SCRIPTED_CALL, {"answer": "done"}]
    result = _run(_suite(tmp_path), 0, script, settings, request_timeout_s=0.5, time_scale=4)
    pins = result.provenance
    assert (pins.request_timeout_s, pins.reply_limit_s, pins.reply_clock) == (0.5, 2.0, "wall")
