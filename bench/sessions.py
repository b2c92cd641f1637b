"""How many agent sessions one worker process keeps in flight against a slow, batching endpoint.

    .venv/bin/python -m bench.sessions [--sessions 1,4,16,64] [--latency 0.5]

A fake OpenAI-compatible endpoint on loopback answers every chat completion after a fixed
latency, with no limit on concurrent requests (as vLLM or llama.cpp's server batching many
requests would look to the farm). It plays an ideal agent for `fs.list-desktop`: one tool call,
then the answer — two model calls per trial. One `farm worker --pool threads --concurrency N`
runs the trials against the real filesystem fixture server and records them in PostgreSQL
through Redis, as in production. With one session the server is a stdio process of the trial's
own; with more, the worker starts it once (its `shared:` launch) and each session in flight
opens its own HTTP session and sandbox on it. For each N it prints the trials/s achieved, the
ideal (N sessions ÷ the two model latencies of a trial), their ratio, the memory of the worker
with its servers, and what each session beyond the first adds to it. Needs Redis and
PostgreSQL on loopback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import redis
from rich.console import Console
from rich.table import Table
from sqlalchemy.engine import Engine

from bench.pipeline import BROKER, ROOT, database, enrolled, process, trials_left, wait
from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.scheduler.submission.submit import submit
from mcp_farm.schema import (
    ModelTarget,
    ScenarioSelection,
    Settings,
    SweepSpec,
)
from mcp_farm.schema.tasks.broker import make_celery

SCENARIO = next(s for s in load_suite("basic").scenarios if s.id == "fs.list-desktop")
console = Console()


class Endpoint(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many sessions connect at once; the default backlog is 5


def _reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The ideal agent's next message: the next expected call, or the answer."""
    step = sum(1 for m in messages if m.get("role") == "tool")
    if step < len(SCENARIO.expect):
        expected = SCENARIO.expect[step]
        call = {
            "id": f"call_{step}",
            "type": "function",
            "function": {"name": expected.tool, "arguments": json.dumps(expected.example or {})},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": SCENARIO.example_answer}


def _handler(latency_s: float) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send({"object": "list", "data": [{"id": "fake"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            time.sleep(latency_s)  # the endpoint "decodes"; every request in parallel
            message = _reply(body.get("messages") or [])
            self._send(
                {
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 300, "completion_tokens": 20},
                }
            )

    return Handler


@contextmanager
def endpoint(latency_s: float) -> Iterator[str]:
    server = Endpoint(("127.0.0.1", 0), _handler(latency_s))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


def sweep(name: str, url: str, sessions: int, repetitions: int) -> SweepSpec:
    model = ModelTarget(
        id="fake", adapter="openai", model="fake", endpoint=url, max_concurrency=sessions
    )
    return SweepSpec(
        name=name,
        models=[model],
        prompts=["native"],
        scenarios=ScenarioSelection(ids=[SCENARIO.id]),
        repetitions=repetitions,
        seed=int(time.time()),
    )


def tree_rss_mb(root: int) -> float:
    """Resident memory of a process and all its descendants (the worker and the MCP servers
    it started, which the SDK puts in sessions of their own)."""
    parents: dict[int, int] = {}
    rss_kb: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            status = (entry / "status").read_text().splitlines()
        except OSError:
            continue  # gone meanwhile
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        rss_kb[pid] = next((int(x.split()[1]) for x in status if x.startswith("VmRSS:")), 0)
    family, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in family} - family
        family |= more
        grew = bool(more)
    return sum(rss_kb.get(pid, 0) for pid in family) / 1024


def measure(
    sessions: int, trials: int, url: str, engine: Engine, env: dict[str, str], settings: Settings
) -> tuple[float, float]:
    """Trials/s with `sessions` trials in flight in one worker process, and its memory (MB)."""
    name = f"bench-sessions-{sessions}@local"
    argv = [sys.executable, "-m", "mcp_farm.scheduler.cli.app", "worker", "--tags", "cpu", "--pool",
            "threads", "--concurrency", str(sessions), "--name", name]  # fmt: skip
    app = make_celery(settings)
    with process(argv, env) as proc:
        wait(lambda: enrolled(engine, name), 60, "the worker")
        # Warm-up: every session starts its server once; then the measured run.
        submit(plan=expand(sweep(f"warm-{sessions}", url, sessions, sessions), "bench"),
               settings=settings, engine=engine, app=app)  # fmt: skip
        wait(lambda: trials_left(engine) == 0, 300, "the warm-up trials")
        plan = expand(sweep(f"run-{sessions}", url, sessions, trials), "bench")
        started = time.perf_counter()
        submit(plan=plan, settings=settings, engine=engine, app=app)
        wait(lambda: trials_left(engine) == 0, 1200, "the measured trials")
        rate = trials / (time.perf_counter() - started)
        return rate, tree_rss_mb(proc.pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", default="1,4,16,64")
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=8, help="trials per session measured")
    args = parser.parse_args()
    broker = redis.Redis.from_url(BROKER)
    per_trial_s = (len(SCENARIO.expect) + 1) * args.latency
    table = Table(
        title=f"Sessions in one worker process ({args.latency:g} s per model reply, "
        f"{per_trial_s:g} s of model time per trial)",
        title_justify="left",
        header_style="bold",
    )
    for head in ("sessions", "trials", "trials/s", "ideal", "of ideal", "memory", "per session"):
        table.add_column(head, justify="right")
    base_mb = None
    with endpoint(args.latency) as url, database() as engine:
        db_url = engine.url.render_as_string(hide_password=False)
        data = ROOT / "farm-data" / "bench-sessions"
        settings = Settings(database_url=db_url, broker_url=BROKER, data_dir=data)
        env = dict(os.environ) | {
            "FARM_DATABASE_URL": db_url,
            "FARM_BROKER_URL": BROKER,
            "FARM_DATA_DIR": str(data),
        }
        for n in (int(s) for s in args.sessions.split(",")):
            broker.flushdb()
            trials = n * args.rounds
            console.print(f"{n} session(s): {trials} trials…")
            rate, rss = measure(n, trials, url, engine, env, settings)
            ideal = n / per_trial_s
            if base_mb is None:
                base_mb, base_n = rss, n
            extra = f"{(rss - base_mb) / (n - base_n):.0f} MB" if n > base_n else "–"
            table.add_row(str(n), str(trials), f"{rate:.1f}", f"{ideal:.1f}",
                          f"{100 * rate / ideal:.0f}%", f"{rss:.0f} MB", extra)  # fmt: skip
    console.print(table)


if __name__ == "__main__":
    main()
