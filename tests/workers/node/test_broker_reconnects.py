"""A worker's reconnection to a lost broker is configured, not left to Celery's defaults, and
Celery's lines about it (a warning when the connection goes, an error per attempt, a
deprecation warning) become the broker outage's own: one line when it starts, one when it ends.
The fault suite holds the same on a real worker whose Redis goes away."""

from __future__ import annotations

import logging

import pytest
import redis
from celery.worker.consumer.consumer import CONNECTION_ERROR, CONNECTION_RETRY
from kombu.common import _ensure_errback

from mcp_farm.schema import Settings
from mcp_farm.workers.node.celery_app import create_app
from mcp_farm.workers.node.outage import BROKER


def test_the_worker_retries_the_broker_for_as_long_as_it_takes_and_lets_running_trials_finish(
    settings: Settings,
) -> None:
    conf = create_app(settings).conf
    assert conf.broker_connection_retry is True
    assert conf.broker_connection_retry_on_startup is True
    assert conf.broker_connection_max_retries is None
    assert conf.worker_cancel_long_running_tasks_on_connection_loss is False
    assert conf.worker_enable_prefetch_count_reduction is False


def test_celerys_reconnection_lines_become_one_outage_line_at_each_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    consumer = logging.getLogger("celery.worker.consumer.consumer")
    connection = logging.getLogger("celery.worker.consumer.connection")
    lost = ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    uri = "redis://127.0.0.1:6379/0"
    caplog.set_level(logging.INFO)
    try:
        consumer.warning("%s (%r)", CONNECTION_RETRY, lost)
        for attempt in range(1, 6):
            consumer.error(CONNECTION_ERROR, uri, lost, f"Trying again in 2 s... ({attempt}/-)")
        logging.getLogger("py.warnings").warning(
            "CPendingDeprecationWarning: ... You can enable this behavior using the "
            "worker_cancel_long_running_tasks_on_connection_loss setting. ..."
        )
        connection.info("Connected to %s", uri)
    finally:
        BROKER.ok()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert lines[0].startswith("the broker (Redis) is unreachable (task consumer: ConnectionError")
    assert lines[1].startswith("the broker (Redis) is reachable again after ")
    assert lines[1].endswith("(6 task consumer failed)")
    assert lines[2] == f"Connected to {uri}"


def test_kombus_error_per_retry_with_a_traceback_is_the_outage_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refused = redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    caplog.set_level(logging.INFO)
    try:
        for interval in (0, 2, 4, 6):
            try:
                raise refused
            except redis.ConnectionError as exc:
                _ensure_errback(exc, interval)  # kombu's own line per publish retry
        logging.getLogger("kombu.common").error("something else went wrong")
        logging.getLogger("celery.worker.consumer.connection").info("Connected to %s", "redis://")
    finally:
        BROKER.ok()
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("the broker (Redis) is unreachable (kombu.common: ConnectionError")
    assert lines[1] == "something else went wrong"  # not a connection error: left alone
    assert lines[2].startswith("the broker (Redis) is reachable again after ")
    assert lines[2].endswith("(4 kombu.common failed)")
    assert len(lines) == 4, lines
    assert not any(r.exc_info for r in caplog.records)
