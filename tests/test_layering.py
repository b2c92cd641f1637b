"""DESIGN.md §3: dependencies point one way; the scheduler never imports workers."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FORBIDDEN = {
    "schema": {"scenarios", "scheduler", "workers"},
    "scenarios": {"scheduler", "workers"},
    "scheduler": {"workers", "mcp_farm.scenarios.servers", "mcp", "llama_cpp"},
    "workers": {"scheduler"},
}


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_packages_import_only_downstream() -> None:
    violations = []
    for package, banned in FORBIDDEN.items():
        for path in (ROOT / package).rglob("*.py"):
            for name in imported_modules(path):
                if any(name == b or name.startswith(b + ".") for b in banned):
                    violations.append(f"{path.relative_to(ROOT)} imports {name}")
    assert violations == []


def test_the_layering_check_would_catch_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from mcp_farm.workers.node.tasks import run_trial\nimport mcp_farm.scheduler.cli.app\n"
    )
    assert {"mcp_farm.workers.node.tasks", "mcp_farm.scheduler.cli.app"} <= imported_modules(bad)
