"""What the scenario tests share: one warm server pool per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mcp_farm.schema import Settings
from mcp_farm.workers.node.runtime import Runtime


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, Settings]]:
    """One warm pool for the whole module, as a worker process would have."""
    data = tmp_path_factory.mktemp("warm")
    settings = Settings(
        data_dir=data, database_url=f"sqlite:///{data / 'farm.sqlite'}", server_start_timeout_s=30
    )
    runtime = Runtime(settings)
    try:
        yield runtime, settings
    finally:
        runtime.close()
