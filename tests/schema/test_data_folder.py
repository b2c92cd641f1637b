"""The data folder, where every trial's sandbox lies, is held as an absolute path however it
is given: servers are handed paths inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_farm.scheduler.cli.common import settings_from
from mcp_farm.schema import Settings, get_settings


def test_the_default_data_folder_is_held_as_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FARM_DATA_DIR", raising=False)
    assert Settings().data_dir == tmp_path / "farm-data"
    monkeypatch.setenv("FARM_DATA_DIR", "runs/../data")
    assert Settings().data_dir == tmp_path / "data"
    get_settings.cache_clear()  # built here, from this working folder, and not kept after
    try:
        assert settings_from(data_dir=Path("cli-data")).data_dir == tmp_path / "cli-data"
    finally:
        get_settings.cache_clear()
