"""Process settings, read once from `FARM_*` environment variables at the process edge."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

STALE_AFTER_BEATS = 3
"""Missed heartbeats after which a node or a trial's holder counts as gone."""


class Settings(BaseSettings):
    """Everything configurable from the environment. Build with `get_settings()`."""

    model_config = SettingsConfigDict(env_prefix="FARM_", extra="ignore")

    data_dir: Path = Field(default=Path("farm-data"))
    """Where the embedded mode keeps its SQLite file and per-trial sandboxes (FARM_DATA_DIR); a
    relative folder is taken from the working folder and held as an absolute path."""

    # The URLs and the password stay out of the settings' repr: it may end up in a log.
    database_url: str | None = Field(default=None, repr=False)
    """SQLAlchemy URL of the results database (FARM_DATABASE_URL); default: SQLite in data_dir."""

    model_cache_dir: Path = Field(default=Path.home() / ".cache" / "mcp-farm" / "models")
    """Where bundled GGUF files are assembled on first use (FARM_MODEL_CACHE_DIR)."""

    local_threads: int = Field(default=2, ge=1)
    """Threads the in-process llama.cpp model decodes with (FARM_LOCAL_THREADS). Its replies
    are the same at any count; only speed changes. On a machine shared with other busy work use
    1: llama.cpp's threads spin while they wait for each other, and a thread that loses its core
    stalls the others (the test run's real-model lane runs with 1 beside the other lanes)."""

    server_start_timeout_s: float = 30.0
    """CPU seconds an MCP server's processes may use to start and list their tools
    (FARM_SERVER_START_TIMEOUT_S); a start-up that gets no CPU time for this long (30 s at
    least) is hung; a server at a URL, with no process here, gets this many wall seconds. Never
    charged to a scenario's `time_limit_s`."""

    server_fork: bool = True
    """Start Python MCP servers run by the farm's own interpreter (`python -m …`, `python
    script.py`) as forks of a warm interpreter that has the MCP SDK imported, saving most of
    each start's CPU (FARM_SERVER_FORK; workers/mcp/launch/). Any other server starts as a
    fresh process either way."""

    worker_tag: str = "cpu"
    """The hardware tag of this process when it runs trials (FARM_WORKER_TAG); a distributed
    worker sets it per trial from the queue the trial came from."""

    node_name: str = ""
    """This worker node's name, recorded with each trial it runs (set by `farm worker`)."""

    broker_url: str = Field(default="redis://127.0.0.1:6379/0", repr=False)
    """The Celery broker for the distributed mode (FARM_BROKER_URL)."""

    preflight: bool = True
    """Before a sweep starts, ask every `openai` model's endpoint for its model list and stop
    when it is unreachable or does not serve the model (FARM_PREFLIGHT; `--no-preflight`). Turn
    it off when only the workers can reach an endpoint."""

    user_check: bool = True
    """Before a sweep with a simulated user starts, ask its user model the calibration's canned
    agent questions and stop when a reply does not play the user (FARM_USER_CHECK;
    `--no-user-check`; docs/simulated-user.md, "Calibration")."""

    preflight_timeout_s: float = 5.0
    """How long that check waits for an endpoint to answer (FARM_PREFLIGHT_TIMEOUT_S)."""

    hardware_tags: str = "cpu,igpu,dgpu,npu"
    """Comma-separated hardware tags that have a queue (FARM_HARDWARE_TAGS); a model's
    `hardware` must be one of them."""

    visibility_timeout_s: int = 3600
    """How long the broker waits for an unacknowledged trial before redelivering it, e.g. when
    its worker was killed (FARM_VISIBILITY_TIMEOUT_S); must exceed the longest trial."""

    infra_retries: int = 3
    """How often a trial that hit an infrastructure error is retried before it is recorded as
    infra_error (FARM_INFRA_RETRIES)."""

    retry_backoff_s: float = 2.0
    """First retry delay; doubled on each further retry (FARM_RETRY_BACKOFF_S)."""

    heartbeat_s: float = 10.0
    """How often a worker node writes its heartbeat, and a process renews the lease of the
    trials it is running (FARM_HEARTBEAT_S). A lease older than three heartbeats is taken
    as the mark of a dead process: its trial may be run again."""

    sessions: int = Field(default=1, ge=1)
    """How many trials one worker process runs at once (FARM_SESSIONS); `farm worker --pool
    threads --concurrency N` sets it to N. Sizes the process's database connection pool and
    how many idle MCP servers it keeps warm."""

    store_retry_s: float = 120.0
    """How long a finished trial waits for the results database (retrying with backoff) before
    its message is given back to the queue unacknowledged (FARM_STORE_RETRY_S)."""

    slot_wait_s: float = 30.0
    """How long a trial waits for a free slot at its model endpoint before it is requeued
    (FARM_SLOT_WAIT_S)."""

    capture_dir: Path | None = None
    """Record every trial's MCP exchanges into cassettes in this folder, one file per server
    (FARM_CAPTURE_DIR; `farm run --capture DIR`; docs/cassettes.md)."""

    flower_user: str = "farm"
    """Flower basic-auth user (FARM_FLOWER_USER)."""

    flower_password: str | None = Field(default=None, repr=False)
    """Flower basic-auth password (FARM_FLOWER_PASSWORD); Flower does not start without one."""

    view_user: str = "farm"
    """`farm view` basic-auth user (FARM_VIEW_USER)."""

    view_password: str | None = Field(default=None, repr=False)
    """`farm view` basic-auth password (FARM_VIEW_PASSWORD): needed to listen anywhere but on
    loopback, and asked for on every page when set."""

    @field_validator("data_dir", mode="after")
    @classmethod
    def _absolute(cls, folder: Path) -> Path:
        # Servers are handed paths inside this folder ({sandbox}); one that resolves a relative
        # path against its own install folder (npm's server-memory) would write there instead.
        return absolute_folder(folder)

    def stale_after_s(self) -> float:
        """How old a heartbeat or trial lease is when its holder counts as gone."""
        return STALE_AFTER_BEATS * self.heartbeat_s

    def declared_tags(self) -> list[str]:
        return [t.strip() for t in self.hardware_tags.split(",") if t.strip()]

    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'farm.sqlite').resolve()}"


def absolute_folder(folder: Path) -> Path:
    """`folder` as an absolute path (`~` expanded, a relative one taken from the working
    folder), without following symbolic links."""
    return Path(os.path.abspath(folder.expanduser()))


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings; call only at process edges (CLI, worker, test fixtures)."""
    return Settings()
