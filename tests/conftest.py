from __future__ import annotations

from pathlib import Path

import pytest

from schema import Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings for one test: its own data folder and SQLite file."""
    return Settings(
        data_dir=tmp_path / "data",
        database_url=f"sqlite:///{tmp_path / 'data' / 'farm.sqlite'}",
        server_start_timeout_s=20.0,
    )
