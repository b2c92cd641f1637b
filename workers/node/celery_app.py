"""The Celery app of a worker: the shared broker configuration plus thin tasks.

Each task only adapts Celery to a plain task function (found by name, like the embedded runner
finds it): which node and queue it runs on, the per-endpoint slot, and retries with backoff for
infrastructure failures. Model failures are recorded once and never retried.
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from celery import Celery, Task
from celery.exceptions import Reject
from celery.signals import worker_process_init, worker_process_shutdown
from celery.worker.consumer.consumer import CONNECTION_ERROR, CONNECTION_RETRY
from kombu.exceptions import OperationalError as KombuOperationalError

from mcp_farm.schema import (
    Settings,
    StoreError,
    TrialSpec,
    load_task,
)
from mcp_farm.schema.tasks.broker import (
    CONTROL_QUEUE,
    QUEUE_PREFIX,
    make_celery,
)
from mcp_farm.schema.tasks.messages import (
    AggregateRequest,
    AggregateResult,
    RescoreRequest,
    RescoreResult,
    TrialDone,
    TrialHeld,
    TrialRetry,
    TrialSkipped,
    TrialSummary,
    read_message,
    read_result,
    read_summary,
)
from mcp_farm.workers.node.outage import BROKER
from mcp_farm.workers.node.runtime import close_runtime
from mcp_farm.workers.node.slots import (
    SlotBusy,
    Slots,
)
from mcp_farm.workers.node.tasks import engine_for

logger = logging.getLogger(__name__)

SLOT_REQUEUE_S = 1.0
RESULT_CHARS = 120
"""The longest task result line (a retry's reason can be a long error message)."""
RETRY_REASON_CHARS = 600
"""The longest reason a retry's log line gives: a server's start failure names the server,
the cause and where its stderr is."""


def trial_settings(settings: Settings, request: Any) -> Settings:
    """The settings for one delivery: this node's name and the tag of the queue it came from."""
    routing_key = (request.delivery_info or {}).get("routing_key") or ""
    tag = routing_key.removeprefix(QUEUE_PREFIX) if routing_key.startswith(QUEUE_PREFIX) else ""
    return settings.model_copy(
        update={"node_name": request.hostname or "", "worker_tag": tag or settings.worker_tag}
    )


def backoff(settings: Settings, attempt: int) -> float:
    return float(settings.retry_backoff_s * (2**attempt))


def retry_reason(problem: str, attempt: int, retries: int) -> str:
    """Why a trial is retried, for the worker's log: which attempt failed and the trial's
    infrastructure problem (which server start failed, and how) on one line, cut at
    RETRY_REASON_CHARS."""
    said = " ".join(problem.split())
    line = f"infrastructure attempt {attempt + 1} of {retries + 1} failed: {said}"
    return line if len(line) <= RETRY_REASON_CHARS else line[: RETRY_REASON_CHARS - 1] + "…"


def task_result(summary: TrialSummary) -> str:
    """What a finished `farm.run_trial` delivery reports to Celery: one short line.

    Flower shows a task's return value in its result column and marks every task that did not
    raise as SUCCESS, model failures included; the line says what actually happened there:
    `wrong_tool · 7.2 s`, `pass · 1.4 s · last of sweep`, `skipped: already recorded`.
    """
    match summary:
        case TrialDone():
            parts: list[str] = [summary.outcome]
            if summary.latency_s is not None:
                parts.append(f"{summary.latency_s:.1f} s")
            if summary.last:
                parts.append("last of sweep")
            return " · ".join(parts)
        case TrialSkipped():
            line = f"skipped: {summary.reason}"
        case TrialHeld():
            line = f"held: {summary.reason}"
        case TrialRetry():
            line = f"retrying: {summary.problem}"
    return line if len(line) <= RESULT_CHARS else line[: RESULT_CHARS - 1] + "…"


class _RejectWithoutTraceback(logging.Filter):
    """Celery logs a rejected task with its traceback. The farm rejects a task only when the
    database stayed away (an expected outage, said in one line by `run_trial` and
    node/outage.py), so Celery's line stays and the traceback goes."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], Reject):
            record.exc_info, record.exc_text = None, None
        return True


logging.getLogger("celery.app.trace").addFilter(_RejectWithoutTraceback())


class _BrokerOutage(logging.Filter):
    """Celery logs a lost broker connection as a warning, then an error with the next attempt's
    delay for every reconnection attempt; kombu's retry helpers (a publish, a declare, a timer
    on the event loop) log an error with a traceback per attempt of their own. Each is
    reported to the broker's outage instead (one line when it starts, a summary every 30 s,
    one line when it ends, node/outage.py), and the reconnection that ends it says so there.
    Any other warning or error of these loggers that carries a connection error is the same
    outage: the rule is the kind of error, not the wording of one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if record.msg is CONNECTION_ERROR and len(args) >= 2:
            BROKER.failed("task consumer", _as_exception(args[1]))
            return False
        if args and args[0] is CONNECTION_RETRY and len(args) >= 2:
            BROKER.failed("task consumer", _as_exception(args[1]))
            return False
        if record.msg == "Connected to %s":
            BROKER.ok()
            return True
        lost = _connection_error(record) if record.levelno >= logging.WARNING else None
        if lost is not None:
            BROKER.failed(record.name, lost)
            return False
        return True


def _as_exception(value: Any) -> BaseException:
    return value if isinstance(value, BaseException) else ConnectionError(str(value))


def _connection_error(record: logging.LogRecord) -> BaseException | None:
    """The broker connection error a log record carries, in its traceback or its arguments."""
    args = record.args if isinstance(record.args, tuple) else ()
    found = [record.exc_info[1]] if record.exc_info and record.exc_info[1] else []
    found += [a for a in args if isinstance(a, BaseException)]
    return next((e for e in found if isinstance(e, BROKER_ERRORS)), None)


BROKER_ERRORS: tuple[type[BaseException], ...] = (
    ConnectionError,
    redis.ConnectionError,
    redis.TimeoutError,
    KombuOperationalError,
)
"""What a broker that went away raises: a refused or reset socket, redis-py's own errors, and
kombu's wrapping of them."""

_BROKER_LOGGERS = (
    "celery.worker.consumer.consumer",
    "celery.worker.consumer.connection",
    "celery.worker.consumer.gossip",
    "celery.worker.components",
    "celery.worker.heartbeat",
    "celery.events.dispatcher",
    "kombu.common",
    "kombu.connection",
    "kombu.asynchronous.hub",
    "kombu.asynchronous.timer",
)
"""Where Celery and kombu log a broker connection's loss and their attempts to get it back."""


class _ChosenBehaviour(logging.Filter):
    """With `worker_cancel_long_running_tasks_on_connection_loss` off (chosen, in
    `reconnect_quietly`), Celery 5 warns at every lost connection, in six lines, that its default
    changes in Celery 6. Celery's logging set-up shows every such warning (and routes it to the
    `py.warnings` logger), so this one is dropped there."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "worker_cancel_long_running_tasks_on_connection_loss" not in record.getMessage()


for _name in _BROKER_LOGGERS:
    logging.getLogger(_name).addFilter(_BrokerOutage())
logging.getLogger("py.warnings").addFilter(_ChosenBehaviour())


def reconnect_quietly(app: Celery) -> None:
    """How a worker behaves when the broker goes away, set explicitly rather than left to
    Celery's defaults (and their deprecation warnings)."""
    app.conf.update(
        # Keep trying, at start-up and after a loss, for as long as it takes: a lab machine
        # outlasts a restart of its head node, however long, and says so once (node/outage.py).
        broker_connection_retry=True,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,
        # A trial running when the broker goes is finished and recorded in the database, which
        # does not need the broker; its message comes back and is skipped as already recorded.
        worker_cancel_long_running_tasks_on_connection_loss=False,
        # One message in hand at a time (prefetch 1): there is no prefetch to reduce.
        worker_enable_prefetch_count_reduction=False,
    )


def create_app(settings: Settings) -> Celery:
    """The worker's app, with `farm.run_trial`, `farm.aggregate` and `farm.rescore_trial`."""
    app = make_celery(settings)
    reconnect_quietly(app)
    slots = Slots(settings.broker_url)

    @app.task(name="farm.run_trial", bind=True, max_retries=None, shared=False)
    def run_trial(self: Task, payload: dict[str, Any], infra_attempt: int = 0) -> str:
        local = trial_settings(settings, self.request)
        spec = read_message("farm.run_trial", payload, TrialSpec)
        final = infra_attempt >= settings.infra_retries

        def retry_infra(problem: str) -> Exception:
            # The same message again later, one infrastructure attempt further. The reason
            # goes into Celery's own log line ("retry: Retry in 2.0s: <reason>") and Flower.
            retry: Exception = self.retry(
                kwargs={"infra_attempt": infra_attempt + 1},
                exc=retry_reason(problem, infra_attempt, settings.infra_retries),
                countdown=backoff(settings, infra_attempt),
                throw=False,
            )
            return retry

        try:
            with slots.hold(
                spec.model, wait_s=settings.slot_wait_s, lease_s=settings.visibility_timeout_s
            ):
                summary = read_summary(load_task("farm.run_trial")(spec, local, record_infra=final))
        except SlotBusy:
            # Not a failure: the endpoint is busy. Back in the queue, attempt count unchanged.
            raise self.retry(countdown=SLOT_REQUEUE_S) from None
        except StoreError as exc:
            # The database stayed away past FARM_STORE_RETRY_S. Acknowledging now would lose
            # the trial (it would stay `running` with nothing left to deliver it again), so
            # the message goes back to the queue, unacknowledged.
            logger.warning("trial %s: %s; giving it back to the queue", spec.trial_id[:12], exc)
            raise Reject(str(exc), requeue=True) from exc
        if isinstance(summary, TrialHeld):
            # Another live process runs this trial (a duplicate message): look again once
            # its lease could have lapsed, so the trial is never lost if that holder dies.
            raise self.retry(countdown=settings.stale_after_s())
        if isinstance(summary, TrialRetry):
            raise retry_infra(summary.problem)
        if isinstance(summary, TrialDone) and summary.last:
            app.send_task(
                "farm.aggregate",
                args=[AggregateRequest(sweep_id=spec.sweep_id).model_dump(mode="json")],
                queue=CONTROL_QUEUE,
                argsrepr=spec.sweep_id,
            )
        # The summary itself stays with the plain task function; Celery gets a readable line.
        return task_result(summary)

    @app.task(name="farm.aggregate", shared=False)
    def aggregate(payload: dict[str, Any]) -> dict[str, Any]:
        request = read_message("farm.aggregate", payload, AggregateRequest)
        result = read_result(
            "farm.aggregate", load_task("farm.aggregate")(request, settings), AggregateResult
        )
        return dict(result.model_dump(mode="json"))

    @app.task(
        name="farm.rescore_trial", bind=True, max_retries=settings.infra_retries, shared=False
    )
    def rescore_trial(self: Task, payload: dict[str, Any]) -> dict[str, Any]:
        request = read_message("farm.rescore_trial", payload, RescoreRequest)
        try:
            found = load_task("farm.rescore_trial")(request, trial_settings(settings, self.request))
        except StoreError as exc:
            raise self.retry(countdown=backoff(settings, self.request.retries)) from exc
        return dict(read_result("farm.rescore_trial", found, RescoreResult).model_dump(mode="json"))

    return app


@worker_process_init.connect
def _fresh_process(**_kwargs: Any) -> None:
    # A forked pool process must not share the parent's database connections.
    engine_for.cache_clear()


@worker_process_shutdown.connect
def _stop_servers(**_kwargs: Any) -> None:
    close_runtime()
