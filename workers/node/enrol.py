"""Enrolment: a lab machine becomes a worker node for its hardware tags.

`farm worker --tags igpu` ends up here. The node records itself in the results database (host,
tags, the models it can reach, versions), writes a heartbeat while it runs, and consumes the
queues of its tags with a Celery worker.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
from datetime import UTC, datetime
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, NoReturn

import httpx
from celery.signals import worker_ready, worker_shutdown, worker_shutting_down
from sqlalchemy.exc import SQLAlchemyError

from mcp_farm.schema import (
    LOCAL_MODELS,
    FarmError,
    Settings,
    StoreError,
)
from mcp_farm.schema.db import (
    make_engine,
    require_latest,
)
from mcp_farm.schema.tasks.broker import (
    CONTROL_QUEUE,
    queue_for,
)
from mcp_farm.workers.model.local import BUNDLED
from mcp_farm.workers.node.celery_app import create_app
from mcp_farm.workers.node.outage import DATABASE
from mcp_farm.workers.node.preflight import check_agents
from mcp_farm.workers.node.provenance import versions
from mcp_farm.workers.node.reaper import Reachability, Reaper
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

    def __init__(
        self, engine: Engine, name: str, row: dict[str, Any], every_s: float, reach: Reachability
    ) -> None:
        self.engine, self.name, self.row, self.every_s = engine, name, row, every_s
        self.reach = reach
        self._stop = threading.Event()

    def enrol(self) -> None:
        enrol_node(self.engine, self.row)
        self.reach.reached()
        threading.Thread(target=self._beat, name="farm-heartbeat", daemon=True).start()

    def _beat(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self._set(last_heartbeat=datetime.now(UTC))
            except (SQLAlchemyError, StoreError) as exc:  # the database is away: expected
                self.reach.lost()
                DATABASE.failed("heartbeat", exc)
            except Exception:  # a missed beat must never stop the worker
                self.reach.lost()
                logger.warning("heartbeat of %s not written", self.name, exc_info=True)
            else:
                self.reach.reached()
                DATABASE.ok()

    def leave(self) -> None:
        self._stop.set()
        self._set(last_heartbeat=datetime.now(UTC), stopped_at=datetime.now(UTC))

    def _set(self, **values: Any) -> None:
        update_node(self.engine, self.name, **values)


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
    check_agents(engine, tags, os.environ)
    node_name = name or f"farm-{'-'.join(tags)}@{socket.gethostname()}"
    queues = [queue_for(t) for t in tags] + ([CONTROL_QUEUE] if control else [])
    now = datetime.now(UTC)
    reach = Reachability()
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
        reach,
    )
    # Every worker can reap; the one holding the broker lease does (workers/node/reaper.py).
    reaper = Reaper(settings, reach, f"{node_name}:{os.getpid()}")
    worker_ready.connect(lambda **_: node.enrol(), weak=False)
    worker_ready.connect(lambda **_: reaper.start(), weak=False)
    worker_shutdown.connect(lambda **_: reaper.stop(), weak=False)
    worker_shutdown.connect(lambda **_: node.leave(), weak=False)
    # A stop someone asked for (SIGTERM, Ctrl-C) is final; any other failed stop is not. The
    # exit status is the stopped worker's own: Celery's `start` does not return it.
    asked = threading.Event()
    stopped: dict[str, Any] = {}
    worker_shutting_down.connect(lambda **_: asked.set(), weak=False)
    worker_shutdown.connect(
        lambda sender=None, **_: stopped.update(code=getattr(sender, "exitcode", None)),
        weak=False,
    )
    app = create_app(settings)
    app.start(
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
    code = stopped.get("code")
    if code and not asked.is_set():
        restart(code)
    if code:
        raise SystemExit(code)


RESTART_S = 5.0
"""How long a worker that stopped on a failure waits before it starts again."""


def restart(code: int | str) -> NoReturn:
    """Start this worker again, as the same process (a supervisor keeps tracking it), after a
    stop nobody asked for: Celery ends the whole worker when a pool process dies before the
    pool has started ("Could not start worker processes"), though a fresh start would serve.
    Its trials were given back by then (acknowledged late, and reaped if they were running)."""
    logger.warning(
        "the worker stopped without being asked to (exit status %s); starting it again in %g s",
        code,
        RESTART_S,
    )
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    time.sleep(RESTART_S)
    os.execv(sys.executable, sys.orig_argv)
