"""`farm trials` and `farm trial show` over a stored trial whose tool result and reply carry
terminal control sequences: shown as escapes, never sent to the terminal."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console

from mcp_farm.scheduler.view.filters import TrialFilter
from mcp_farm.scheduler.view.queries import read_only, trial_page, trial_record
from mcp_farm.scheduler.view.terminal import print_trial, print_trials
from mcp_farm.schema.db import make_engine
from tests.scheduler.view.conftest import Recorded, farm

TITLE = "\x1b]0;pwned-title\x07"
CLEAR = "\x1b[2J"
C1 = "\x9b31m"
SENT = (TITLE, CLEAR, "\x1b]", "\x07", "\x9b")
"""What must not reach the terminal (Rich's own styles are `\\x1b[…m`, so not `\\x1b[`)."""


@pytest.fixture(scope="module")
def hostile(recorded: Recorded, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the recorded sweep where the careless trial's tool result, error, reply and
    detail carry control sequences, as a server or a model could have written them."""
    data = tmp_path_factory.mktemp("hostile")
    with (
        sqlite3.connect(recorded.data / "farm.sqlite") as source,
        sqlite3.connect(data / "farm.sqlite") as copy,
    ):
        source.backup(copy)
        (transcript,) = copy.execute(
            "select transcript_json from trial where trial_id = ?", (recorded.careless,)
        ).fetchone()
        messages = json.loads(transcript)
        for m in messages:
            if m["role"] == "tool":
                m["content"] = f"result {TITLE}{CLEAR} end"
            if m["role"] == "assistant" and m["content"]:
                m["content"] = f"reply {CLEAR}{C1} end"
        copy.execute(
            "update trial set transcript_json = ?, final_answer = ?, detail = ? where trial_id = ?",
            (json.dumps(messages), f"answer {TITLE}", f"detail {CLEAR}", recorded.careless),
        )
        copy.execute(
            "update tool_call set error = ? where trial_id = ? and idx = 1",
            (f"error {TITLE}", recorded.careless),
        )
    return data


def assert_inert(out: str) -> None:
    for sequence in SENT:
        assert sequence not in out, f"{sequence!r} reached the terminal"


def test_plain_output_shows_control_sequences_as_escapes(hostile: Path, recorded: Recorded) -> None:
    listed = farm("trials", "--outcome", "wrong_params", data=hostile)
    assert listed.returncode == 0, listed.stderr
    assert_inert(listed.stdout)
    assert "detail \\x1b[2J" in listed.stdout
    shown = farm("trial", "show", recorded.careless, data=hostile)
    assert shown.returncode == 0, shown.stderr
    assert_inert(shown.stdout)
    assert "result \\x1b]0;pwned-title\\x07\\x1b[2J end" in shown.stdout
    assert "reply \\x1b[2J\\x9b31m end" in shown.stdout
    assert "error \\x1b]0;pwned-title\\x07" in shown.stdout
    assert "answer \\x1b]0;pwned-title\\x07" in shown.stdout


def test_terminal_output_shows_control_sequences_as_escapes(
    hostile: Path, recorded: Recorded
) -> None:
    engine = read_only(make_engine(f"sqlite:///{hostile / 'farm.sqlite'}"))
    record = trial_record(engine=engine, trial_id=recorded.careless)
    assert record is not None
    page = trial_page(
        engine=engine,
        sweep_id=recorded.sweep_id,
        selection=TrialFilter.read({"outcome": "wrong_params"}),
    )
    buffer = io.StringIO()
    tty = Console(file=buffer, force_terminal=True, width=200)
    print_trials(page, tty)
    print_trial(record, tty)
    out = buffer.getvalue()
    assert "\x1b[1m" in out, "not styled as on a terminal"
    assert_inert(out)
    assert "result \\x1b]0;pwned-title\\x07\\x1b[2J end" in out
    assert "detail \\x1b[2J" in out
