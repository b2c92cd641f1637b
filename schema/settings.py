"""Process settings, read once from `FARM_*` environment variables at the process edge."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything configurable from the environment. Build with `get_settings()`."""

    model_config = SettingsConfigDict(env_prefix="FARM_", extra="ignore")

    data_dir: Path = Field(default=Path("farm-data"))
    """Where the embedded mode keeps its SQLite file and per-trial sandboxes (FARM_DATA_DIR)."""

    database_url: str | None = None
    """SQLAlchemy URL of the results database (FARM_DATABASE_URL); default: SQLite in data_dir."""

    model_cache_dir: Path = Field(default=Path.home() / ".cache" / "mcp-farm" / "models")
    """Where bundled GGUF files are assembled on first use (FARM_MODEL_CACHE_DIR)."""

    server_start_timeout_s: float = 30.0
    """How long an MCP server may take to start and list its tools (FARM_SERVER_START_TIMEOUT_S)."""

    worker_tag: str = "cpu"
    """The hardware tag of this process when it runs trials (FARM_WORKER_TAG)."""

    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'farm.sqlite').resolve()}"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings; call only at process edges (CLI, worker, test fixtures)."""
    return Settings()
