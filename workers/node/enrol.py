"""Enrolment: a lab machine becomes a worker node for its hardware tags.

`farm worker --tags igpu` ends up here. The node records itself in the results database (host,
tags, the models it can reach, versions), writes a heartbeat while it runs, and consumes the
queues of its tags with a Celery worker.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from datetime import UTC, datetime
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

import httpx
from celery.signals import worker_ready, worker_shutdown

from mcp_farm.schema import (
    LOCAL_MODELS,
    FarmError,
    Settings,
    load_task,
)
from mcp_farm.schema.db import (
    make_engine,
    require_latest,
)
from mcp_farm.schema.tasks.broker import (
    CONTROL_QUEUE,
    queue_for,
)
from mcp_farm.schema.tasks.messages import RequeueRequest, RequeueResult, read_result
from mcp_farm.workers.model.local import BUNDLED
from mcp_farm.workers.node.celery_app import create_app
from mcp_farm.workers.node.provenance import versions
from mcp_farm.workers.store.nodes import enrol_node, update_node

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

logger = logging.getLogger(__name__)


def reachable_models(endpoints: list[str]) -> list[str]:
    """Bundled models this machine can run, and the models each endpoint lists."""
    found = []
    if find_spec("llama_cpp") is not None:
        found += [f"local:{m}" for m in LOCAL_MODELS if find_spec(BUNDLED[m].package)]
    for url in endpoints:
        try:
            listed = httpx.get(url.rstrip("/") + "/models", timeout=5).json()["data"]
            found += [f"{url}:{m['id']}" for m in listed]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            logger.warning("endpoint %s did not list its models: %s", url, exc)
            found.append(f"{url}:unreachable")
    return found


def check_tags(settings: Settings, tags: list[str]) -> None:
    declared = settings.declared_tags()
    unknown = [t for t in tags if t not in declared]
    if not tags or unknown:
        raise FarmError(
            f"unknown hardware tag(s) {', '.join(unknown) or '(none given)'}: declared tags are "
            f"{', '.join(declared)} (set FARM_HARDWARE_TAGS to declare more, on every node)"
        )


class Node:
    """This worker node's row in the database, kept fresh by a heartbeat thread."""

    def __init__(self, engine: Engine, name: str, row: dict[str, Any], every_s: float) -> None:
        self.engine, self.name, self.row, self.every_s = engine, name, row, every_s
        self._stop = threading.Event()

    def enrol(self) -> None:
        enrol_node(self.engine, self.row)
        threading.Thread(target=self._beat, name="farm-heartbeat", daemon=True).start()

    def _beat(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self._set(last_heartbeat=datetime.now(UTC))
            except Exception:  # a missed beat must never stop the worker
                logger.warning("heartbeat of %s not written", self.name, exc_info=True)

    def leave(self) -> None:
        self._stop.set()
        self._set(last_heartbeat=datetime.now(UTC), stopped_at=datetime.now(UTC))

    def _set(self, **values: Any) -> None:
        update_node(self.engine, self.name, **values)


class Reaper:
    """On the control node: give trials whose holder died back to their queues, every beat.

    It acts only after it has reached the database without a break for a full stale window:
    right after an outage every lease looks old, though live holders have simply not been
    able to renew them yet.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._stop = threading.Event()
        self._reachable_since: float | None = None

    def start(self) -> None:
        threading.Thread(target=self._run, name="farm-reaper", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.settings.heartbeat_s):
            self.sweep_once()

    def sweep_once(self) -> int:
        """One pass; returns how many trials were given back (0 while it may not act yet)."""
        now = time.monotonic()
        since = self._reachable_since
        act = since is not None and now - since >= self.settings.stale_after_s()
        try:
            task = load_task("farm.requeue_orphans")
            done = read_result(
                "farm.requeue_orphans", task(RequeueRequest(act=act), self.settings), RequeueResult
            )
        except Exception:  # a boundary: the reaper must outlive any outage
            self._reachable_since = None
            logger.warning("could not look for abandoned trials", exc_info=True)
            return 0
        if since is None:
            self._reachable_since = now
        requeued = done.requeued
        if requeued:
            logger.warning("gave %d trial(s) of dead workers back to their queues", requeued)
        return requeued


def start_worker(
    settings: Settings,
    *,
    tags: list[str],
    concurrency: int,
    name: str | None = None,
    control: bool = False,
    endpoints: list[str] | None = None,
    pool: str = "prefork",
    loglevel: str = "INFO",
) -> None:
    """Enrol this machine and consume its tags' queues until stopped (blocks).

    With the `threads` pool one process runs `concurrency` trials at once, on one event loop
    and one warm server pool (servers with a `shared:` launch run once, a session per trial):
    the way to keep a batching GPU endpoint busy without a process per session."""
    check_tags(settings, tags)
    if pool == "threads":
        settings = settings.model_copy(update={"sessions": concurrency})
    url = settings.resolved_database_url()
    engine = make_engine(url)
    require_latest(engine, url)
    node_name = name or f"farm-{'-'.join(tags)}@{socket.gethostname()}"
    queues = [queue_for(t) for t in tags] + ([CONTROL_QUEUE] if control else [])
    now = datetime.now(UTC)
    node = Node(
        engine,
        node_name,
        {
            "name": node_name,
            "host": socket.gethostname(),
            "tags_json": json.dumps(tags + (["control"] if control else [])),
            "models_json": json.dumps(reachable_models(endpoints or [])),
            "versions_json": json.dumps(versions()),
            "concurrency": concurrency,
            "started_at": now,
            "last_heartbeat": now,
            "stopped_at": None,
        },
        settings.heartbeat_s,
    )
    reaper = Reaper(settings)
    worker_ready.connect(lambda **_: node.enrol(), weak=False)
    worker_shutdown.connect(lambda **_: node.leave(), weak=False)
    if control:
        worker_ready.connect(lambda **_: reaper.start(), weak=False)
        worker_shutdown.connect(lambda **_: reaper.stop(), weak=False)
    app = create_app(settings)
    app.worker_main(
        [
            "worker",
            f"--hostname={node_name}",
            f"--queues={','.join(queues)}",
            f"--concurrency={concurrency}",
            f"--pool={pool}",
            f"--loglevel={loglevel}",
            "--without-gossip",
            "--without-mingle",
        ]
    )
