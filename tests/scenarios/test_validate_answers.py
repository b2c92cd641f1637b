"""`farm scenarios validate` checks the citations answer specs list against the pinned tree."""

from __future__ import annotations

from pathlib import Path

import yaml

from mcp_farm.scenarios.catalog import (
    FIXTURES_DIR,
    suite_path,
)
from mcp_farm.scenarios.validate import check_file


def test_the_bundled_code_suite_cites_only_what_exists() -> None:
    _suite, problems = check_file(suite_path("code"))
    assert problems == []


def test_a_citation_past_the_end_or_to_a_missing_file_is_named(tmp_path: Path) -> None:
    data = yaml.safe_load(suite_path("code").read_text(encoding="utf-8"))
    data["scenarios"][0]["answer"]["citations"] = [
        "h11/_connection.py:9999",
        "h11/_nowhere.py:3",
        "h11/_connection.py:12-3",
        "see h11/_util.py",
    ]
    path = tmp_path / "code.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    _suite, problems = check_file(path)
    found = [(p.field, p.problem) for p in problems]
    field = "scenarios[0].answer.citations"
    source = FIXTURES_DIR / "code" / "h11" / "h11" / "_connection.py"
    lines = len(source.read_text(encoding="utf-8").splitlines())
    assert (f"{field}[0]", f"h11/_connection.py:9999: lines must lie in 1..{lines}") in found
    assert any(f == f"{field}[1]" and "not in code/h11" in why for f, why in found)
    assert any(f == f"{field}[2]" and "lines must lie" in why for f, why in found)
    assert any(f == f"{field}[3]" and "is not `path`" in why for f, why in found)
    assert len(found) == 4
