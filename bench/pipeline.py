"""Throughput of the distributed pipeline against raw Celery, farm overhead per trial, and the
time to submit a large sweep. Needs Redis and PostgreSQL on loopback (as the tests do).

    .venv/bin/python -m bench.pipeline [--trials 2000] [--submit 100000]

Both throughput runs use the same broker, the same Celery configuration (JSON, late acks,
prefetch 1) and a 2-process prefork worker. The farm runs real trials: a zero-latency scripted
model lists the Desktop on the filesystem fixture server (kept warm), grades, and upserts the
trial and its tool call into Postgres.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis
from rich.console import Console
from rich.table import Table
from sqlalchemy import func, select, text
from sqlalchemy.engine import Engine
from sqlmodel import col

from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.scheduler.submission.publish import publish_trials
from mcp_farm.scheduler.submission.queries import record_plan
from mcp_farm.scheduler.submission.submit import submit
from mcp_farm.schema import (
    ModelTarget,
    ScenarioSelection,
    Settings,
    SweepSpec,
)
from mcp_farm.schema.db import (
    NodeRow,
    TrialRow,
    init_db,
    make_engine,
    session_scope,
)
from mcp_farm.schema.tasks.broker import make_celery

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN = os.environ.get("FARM_BENCH_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
BROKER = os.environ.get("FARM_BENCH_REDIS", "redis://127.0.0.1:6379/12")
QUEUE = "farm.hw.cpu"
console = Console()


def wait(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)


def admin_engine() -> Engine:
    """The server's admin database, for creating and dropping benchmark databases."""
    return make_engine(PG_ADMIN).execution_options(isolation_level="AUTOCOMMIT")


def migrated(name: str) -> Engine:
    """An engine on the benchmark database `name`, its tables created or migrated."""
    engine = make_engine(PG_ADMIN.rsplit("/", 1)[0] + f"/{name}")
    init_db(engine)
    return engine


@contextmanager
def database() -> Iterator[Engine]:
    admin = admin_engine()
    name = f"farm_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'create database "{name}"'))
    engine = migrated(name)
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'drop database "{name}" with (force)'))


@contextmanager
def process(argv: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def ideal_sweep(name: str, repetitions: int) -> SweepSpec:
    scenario = next(s for s in load_suite("basic").scenarios if s.id == "fs.list-desktop")
    script: list[dict[str, Any]] = [
        {"call": {"name": step.tool, "arguments": step.example or {}}} for step in scenario.expect
    ] + [{"answer": scenario.example_answer}]
    model = ModelTarget(id="ideal", adapter="scripted", model="script", script=script)
    return SweepSpec(
        name=name,
        models=[model],
        prompts=["native"],
        scenarios=ScenarioSelection(ids=[scenario.id]),
        repetitions=repetitions,
        seed=int(time.time()),
    )


def enrolled(engine: Engine, name: str) -> bool:
    """Whether the worker node `name` has recorded itself."""
    with session_scope(engine) as session:
        return session.get(NodeRow, name) is not None


def trials_left(engine: Engine) -> int:
    """Trials of any sweep not recorded yet."""
    with session_scope(engine) as session:
        return int(
            session.execute(
                select(func.count())
                .select_from(TrialRow)
                .where(col(TrialRow.status).in_(("pending", "running")))
            ).scalar_one()
        )


def any_trials_left(engine: Engine) -> bool:
    """Whether any trial is not recorded yet: one index probe, however many are pending.
    Polled every 20 ms while the farm drains, a count over thousands of pending rows cost
    PostgreSQL more CPU than the raw row's Redis poll, on the cores the farm shares."""
    with engine.connect() as conn:
        found = conn.execute(
            select(col(TrialRow.trial_id))
            .where(col(TrialRow.status).in_(("pending", "running")))
            .limit(1)
        ).first()
    return found is not None


def raw_celery(n: int, env: dict[str, str], broker: redis.Redis) -> float:
    """No-op tasks per second, published in batches and drained by a 2-process worker."""
    app = make_celery(Settings(broker_url=BROKER), name="bench")
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "bench.noop_app",
        "worker",
        "-Q",
        QUEUE,
        "-c",
        "2",
        "--without-gossip",
        "--without-mingle",
        "-l",
        "WARNING",
    ]
    with process(argv, env):
        wait(lambda: bool(app.control.ping(timeout=0.5)), 60, "the no-op worker")
        started = time.perf_counter()
        with app.producer_or_acquire() as producer, producer.batch(max_size=1000):
            for i in range(n):
                app.send_task("bench.noop", args=[{"i": i}], queue=QUEUE, producer=producer)
        wait(lambda: broker.llen(QUEUE) == 0 and broker.hlen("unacked") == 0, 600, "the drain")
        return n / (time.perf_counter() - started)


def farm_pipeline(n: int, engine: Engine, env: dict[str, str], settings: Settings) -> float:
    """Trials per second through submit → worker → Postgres, for a warm worker."""
    argv = [
        sys.executable,
        "-m",
        "mcp_farm.scheduler.cli.app",
        "worker",
        "--tags",
        "cpu",
        "--concurrency",
        "2",
        "--name",
        "bench@local",
        "--loglevel",
        "WARNING",  # as the raw Celery worker: the same configuration for both rows
    ]

    with process(argv, env):
        wait(lambda: enrolled(engine, "bench@local"), 60, "the farm worker")
        # Warm up: each pool process starts its servers once.
        warm = expand(ideal_sweep("bench-warmup", 20), "bench")
        submit(plan=warm, settings=settings, engine=engine, app=make_celery(settings))
        wait(lambda: not any_trials_left(engine), 120, "the warm-up trials")
        plan = expand(ideal_sweep("bench-pipeline", n), "bench")
        started = time.perf_counter()
        submit(plan=plan, settings=settings, engine=engine, app=make_celery(settings))
        wait(lambda: not any_trials_left(engine), 1200, "the farm trials")
        return n / (time.perf_counter() - started)


def per_trial_overhead(n: int, engine: Engine, settings: Settings) -> tuple[float, float]:
    """p50 and p95 of one trial's whole farm time (claim, session, grade, upsert), in ms,
    in this process with warm servers; the scripted model itself takes microseconds."""
    from mcp_farm.workers.node.runtime import close_runtime
    from mcp_farm.workers.node.tasks import run_trial

    plan = expand(ideal_sweep("bench-overhead", n + 20), "bench")
    record_plan(engine=engine, plan=plan)
    times = []
    for i, trial in enumerate(plan.trials):
        started = time.perf_counter()
        run_trial(trial.model_dump(mode="json"), settings)
        if i >= 20:
            times.append((time.perf_counter() - started) * 1000)
    close_runtime()
    return statistics.median(times), statistics.quantiles(times, n=20)[-1]


def submit_time(
    n: int, engine: Engine, settings: Settings, broker: redis.Redis
) -> dict[str, float]:
    """Seconds to expand, record and publish an n-trial sweep (no worker consuming)."""
    spec = ideal_sweep("bench-submit", n)
    t0 = time.perf_counter()
    plan = expand(spec, "bench")
    t1 = time.perf_counter()
    record_plan(engine=engine, plan=plan, queues={"ideal": QUEUE})
    t2 = time.perf_counter()
    publish_trials(make_celery(settings), ((t, QUEUE) for t in plan.trials))
    t3 = time.perf_counter()
    assert broker.llen(QUEUE) == n
    broker.flushdb()
    return {"expand": t1 - t0, "record": t2 - t1, "publish": t3 - t2, "total": t3 - t0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--submit", type=int, default=100_000)
    parser.add_argument("--overhead", type=int, default=300)
    args = parser.parse_args()
    broker = redis.Redis.from_url(BROKER)
    broker.flushdb()
    with database() as engine:
        url = engine.url.render_as_string(hide_password=False)
        data = ROOT / "farm-data" / "bench"
        settings = Settings(database_url=url, broker_url=BROKER, data_dir=data)
        env = dict(os.environ) | {
            "FARM_DATABASE_URL": url,
            "FARM_BROKER_URL": BROKER,
            "FARM_DATA_DIR": str(data),
        }
        results = Table(
            title="Pipeline benchmark (same broker, 2-process workers)",
            title_justify="left",
            header_style="bold",
        )
        results.add_column("measure")
        results.add_column("value", justify="right")
        console.print(f"raw Celery: {args.trials} no-op tasks…")
        noop = raw_celery(args.trials, env, broker)
        broker.flushdb()
        console.print(f"farm: {args.trials} real trials (scripted model, warm MCP server)…")
        farm = farm_pipeline(args.trials, engine, env, settings)
        broker.flushdb()
        console.print(f"farm time per trial: {args.overhead} trials in-process…")
        p50, p95 = per_trial_overhead(args.overhead, engine, settings)
        console.print(f"submit: {args.submit} trials…")
        sub = submit_time(args.submit, engine, settings, broker)
        results.add_row("raw Celery no-op tasks/s", f"{noop:.0f}")
        results.add_row("farm pipeline trials/s", f"{farm:.0f}")
        results.add_row("farm / raw Celery", f"{100 * farm / noop:.0f}%")
        results.add_row("farm time per trial p50 / p95", f"{p50:.1f} ms / {p95:.1f} ms")
        for phase, seconds in sub.items():
            results.add_row(f"submit {args.submit:,} trials: {phase}", f"{seconds:.1f} s")
        console.print(results)


if __name__ == "__main__":
    main()
