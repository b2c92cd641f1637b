"""The farm uses the MCP SDK through its public API only: no module of the SDK whose name
starts with `_` is imported anywhere in the farm, so an SDK release that moves its private
modules cannot break a trial (issue 36, item 24: the `input_required` round trip once read
`mcp.client._input_required`)."""

from __future__ import annotations

import ast
from pathlib import Path

from mcp_farm.workers.mcp.pool import REPO_ROOT

PACKAGES = ("schema", "scenarios", "scheduler", "workers")


def _private_sdk_imports(path: Path, root: Path = REPO_ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] in ("mcp", "mcp_types") and any(p.startswith("_") for p in parts[1:]):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {name}")
    return found


def test_no_module_of_the_farm_imports_a_private_part_of_the_mcp_sdk() -> None:
    files = [p for package in PACKAGES for p in (REPO_ROOT / package).rglob("*.py")]
    assert len(files) > 100
    assert [hit for path in files for hit in _private_sdk_imports(path)] == []


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import mcp.shared._httpx_utils\n"
        "from mcp.client._input_required import run_input_required_driver\n"
        "from mcp.client.session import ClientSession\n",
        encoding="utf-8",
    )
    assert _private_sdk_imports(probe, tmp_path) == [
        "probe.py:1: mcp.shared._httpx_utils",
        "probe.py:2: mcp.client._input_required",
        "probe.py:2: mcp.client._input_required.run_input_required_driver",
    ]
