"""An expected outage is one line when it starts, a summary with counts while it lasts, and
one line when it ends; no traceback, however many steps meet it."""

from __future__ import annotations

import logging
import time

import pytest
from sqlalchemy.exc import OperationalError

from mcp_farm.workers.node.outage import Outage


def down() -> OperationalError:
    return OperationalError("connect", {}, Exception("connection refused\nDETAIL: more"))


def test_three_hundred_failures_make_three_lines_and_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outage = Outage("the results database is", summary_s=0.05)
    caplog.set_level(logging.INFO)
    for i in range(300):
        outage.failed(
            ("heartbeat", "lease renewal", "trial ab12 finished (pass) but")[i % 3], down()
        )
        if i == 150:
            time.sleep(0.06)  # one summary falls due
    outage.ok()
    outage.ok()  # nothing more: it already ended
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert lines[0].startswith("the results database is unreachable (heartbeat: OperationalError")
    assert "trying again quietly" in lines[0]
    assert lines[1].startswith("the results database is still unreachable after ")
    assert "51 heartbeat" in lines[1] or "52 heartbeat" in lines[1]
    assert lines[2].startswith("the results database is reachable again after ")
    assert "100 heartbeat, 100 lease renewal, 100 trial ab12 finished (pass) but failed" in lines[2]
    assert not any(r.exc_info for r in caplog.records) and "Traceback" not in caplog.text


def test_a_new_outage_after_the_end_is_reported_again(caplog: pytest.LogCaptureFixture) -> None:
    outage = Outage("the results database is")
    caplog.set_level(logging.INFO)
    outage.failed("heartbeat", down())
    outage.ok()
    outage.failed("heartbeat", down())
    assert outage.ongoing
    starts = [r for r in caplog.records if "unreachable (" in r.getMessage()]
    assert len(starts) == 2
