"""Tool results that are not plain text reach the model with what identifies them, as MCP
clients show them, instead of a bare `[resource_link]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import Settings
from mcp_farm.workers.mcp.connections import result_text
from mcp_farm.workers.trial import execute_trial
from tests.helpers import trial
from tests.servers.rich import (
    REPORT_URI,
    build,
)

RICH_SERVER = Path(__file__).resolve().parents[2] / "servers" / "rich.py"


async def _rendered(tool: str, arguments: dict[str, Any]) -> str:
    async with Client(build()) as client:  # the SDK's in-memory transport
        return result_text(await client.call_tool(tool, arguments))


@pytest.mark.parametrize(
    ("tool", "arguments", "shown"),
    [
        (
            "find_report",
            {"quarter": "Q1 2026"},
            f"[resource link: {REPORT_URI}] q1-sales.csv; type text/csv\nSales by region for Q1 2026",
        ),
        (
            "open_report",
            {"quarter": "Q1 2026"},
            f"[resource: {REPORT_URI} (text/csv)]\nregion,total\nnorth,46550",
        ),
        (
            "download_archive",
            {},
            "[resource: file:///reports.zip (application/zip), 300 bytes of binary data]",
        ),
        (
            "export_report",
            {},
            "[resource: file:///q1.csv (text/csv; charset=utf-8)]\nregion,total\nnorth,46550\n",
        ),
        ("chart", {}, "[image: image/png, 1024 bytes]"),
        ("jingle", {}, "[audio: audio/wav, 100 bytes]"),
        ("totals", {}, '{"north": 46550, "south": 38200}'),
    ],
    ids=[
        "resource-link",
        "embedded-text",
        "embedded-blob",
        "text-blob",
        "image",
        "audio",
        "structured",
    ],
)
def test_each_kind_of_content_is_shown_by_what_identifies_it(
    tool: str, arguments: dict[str, Any], shown: str
) -> None:
    assert anyio.run(_rendered, tool, arguments) == shown


@pytest.mark.integration
def test_a_linked_report_reaches_the_model_with_its_uri_name_type_and_description(
    tmp_path: Path, settings: Settings
) -> None:
    path = tmp_path / "rich.yaml"
    path.write_text(f"""
suite: rich
servers:
  - name: rich
    command: ["{{python}}", "{RICH_SERVER}"]
scenarios:
  - id: rich.find
    version: 1
    tier: simple
    prompt: Where is the Q1 sales report?
    servers: [rich]
    expect:
      - tool: find_report
        params: {{quarter: {{any: true}}}}
    final_answer: "q1-sales[.]csv"
""")
    scenario = load_suite(str(path)).scenarios[0]
    script = [
        {"call": {"name": "find_report", "arguments": {"quarter": "Q1"}}},
        {"answer": f"It is q1-sales.csv at {REPORT_URI}."},
    ]
    result = anyio.run(execute_trial, trial(scenario, script, suite=str(path)), settings)
    assert result.outcome == "pass", result.detail
    seen = next(m.content for m in result.transcript if m.role == "tool")
    assert (
        seen == f"[resource link: {REPORT_URI}] q1-sales.csv; type text/csv\nSales by region for Q1"
    )
