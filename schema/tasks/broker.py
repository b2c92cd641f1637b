"""The broker contract both sides share: queue names and one Celery configuration.

The scheduler publishes with it and workers consume with it, so the two can never disagree on
serializer, queues or delivery guarantees. Tasks are registered only on workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_farm.schema.redact import remember_url_password
from mcp_farm.schema.settings import Settings

if TYPE_CHECKING:
    from celery import Celery

CONTROL_QUEUE = "farm.control"
"""Aggregation and other control work; consumed by `farm worker --control`."""

QUEUE_PREFIX = "farm.hw."


def queue_for(tag: str) -> str:
    """The queue of a hardware tag: `igpu` → `farm.hw.igpu`."""
    return QUEUE_PREFIX + tag


def declared_queues(settings: Settings) -> list[str]:
    return [queue_for(tag) for tag in settings.declared_tags()] + [CONTROL_QUEUE]


def make_celery(settings: Settings, name: str = "farm") -> Celery:
    """A Celery app configured for the farm; no tasks registered."""
    from celery import Celery  # here, so the queue names cost no Celery import
    from kombu.entity import Queue

    remember_url_password(settings.broker_url)  # masked wherever it turns up
    app = Celery(name, broker=settings.broker_url, set_as_current=False)
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        # Results go to the database, never the result backend.
        task_ignore_result=True,
        result_backend=None,
        # At-least-once: acknowledge after the trial is recorded, one message in hand at a time,
        # and give a trial back to the queue when its worker process dies under it.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_transport_options={
            "visibility_timeout": settings.visibility_timeout_s,
            # Look for abandoned trials (a worker killed mid-trial) every few seconds, not
            # kombu's default of about every 100 s.
            "unacked_restore_interval": max(1, min(10, settings.visibility_timeout_s // 4)),
            "unacked_restore_throttle": 1,
        },
        broker_connection_retry_on_startup=True,
        # Routing is explicit: only declared queues exist; publishing elsewhere fails.
        task_queues=[
            Queue(q, routing_key=q)  # type: ignore[no-untyped-call]
            for q in declared_queues(settings)
        ],
        task_create_missing_queues=False,
        task_default_queue=CONTROL_QUEUE,
        # Events for Flower.
        worker_send_task_events=True,
        task_send_sent_event=True,
        worker_hijack_root_logger=False,
        enable_utc=True,
    )
    return app
