"""An agent's stdout and stderr are kept on every agent trial, bounded (the last 8 KB of each),
stored with it, and shown escaped on the explorer's trial page and in the terminal."""

from __future__ import annotations

from pathlib import Path

import anyio
from rich.console import Console

from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.view.queries import trial_record
from mcp_farm.scheduler.view.terminal import print_trial
from mcp_farm.scheduler.view.trial_page import trial_page
from mcp_farm.schema import ModelTarget, Settings, TrialResult
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.schema.trial import AGENT_OUTPUT_BYTES
from mcp_farm.workers.store.results import save_trial
from mcp_farm.workers.trial import execute_trial
from tests.helpers import trial

SCENARIO = load_suite("basic").scenarios[0]

CHATTY = (
    "import sys; sys.stdin.read()\n"
    "sys.stderr.write('x' * 20000 + '<script>alert(1)</script>\\x1b[31m')\n"
    "print('<b>done</b>')"
)
"""An agent that writes 20 KB to stderr, then markup and a control character, and answers
with markup on stdout."""


def _run(settings: Settings, command: list[str]) -> tuple[object, TrialResult]:
    target = ModelTarget.model_validate(
        {"id": "chatty", "adapter": "agent", "model": "chatty", "agent": {"command": command}}
    )
    spec = trial(SCENARIO, []).model_copy(update={"model": target})
    return spec, anyio.run(execute_trial, spec, settings)


def test_an_agent_trial_keeps_the_end_of_its_stdout_and_stderr(settings: Settings) -> None:
    _spec, result = _run(settings, ["{python}", "-c", CHATTY])
    output = result.agent_output
    assert output is not None
    assert output.stdout == "<b>done</b>\n"
    assert not output.stdout_cut
    assert output.stderr_cut
    assert output.stderr.endswith("<script>alert(1)</script>\\x1b[31m")
    assert len(output.stderr) <= AGENT_OUTPUT_BYTES + len("\\x1b") - 1


def test_a_model_trial_has_no_agent_output(settings: Settings) -> None:
    result = anyio.run(execute_trial, trial(SCENARIO, [{"answer": "no"}]), settings)
    assert result.agent_output is None


def test_the_trial_page_and_the_terminal_show_the_agent_output_escaped(
    settings: Settings, tmp_path: Path
) -> None:
    spec, result = _run(settings, ["{python}", "-c", CHATTY])
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    save_trial(engine=engine, spec=spec, result=result)  # type: ignore[arg-type]
    record = trial_record(engine=engine, trial_id=result.trial_id)
    assert record is not None
    page = trial_page(record)
    assert "<h2>Agent output</h2>" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[31m" in page
    assert "<script>alert" not in page and "<b>done" not in page
    assert f"stderr (its last {AGENT_OUTPUT_BYTES // 1024} KB)" in page
    console = Console(width=200, no_color=True, force_terminal=False)
    with console.capture() as captured:
        print_trial(record, console)
    shown = captured.get()
    assert "agent stdout:" in shown and "<b>done</b>" in shown
    assert "\x1b[31m" not in shown
