"""Test-only MCP server whose tools answer with every kind of content but plain text: a
resource link, embedded text and binary resources, an image, audio, and structured content
with no text beside it."""

from __future__ import annotations

import base64

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextResourceContents,
)

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    serve,
)

REPORT_URI = "file:///reports/q1-sales.csv"
PIXELS = bytes(range(256)) * 4  # 1024 bytes
SOUND = b"RIFF" + bytes(96)  # 100 bytes


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def build() -> MCPServer:
    server = MCPServer("rich")

    @server.tool()
    def find_report(quarter: str) -> ResourceLink:
        """Find the sales report of a quarter; returns a link to it."""
        return ResourceLink(
            type="resource_link",
            uri=REPORT_URI,
            name="q1-sales.csv",
            mime_type="text/csv",
            description=f"Sales by region for {quarter}",
        )

    @server.tool()
    def open_report(quarter: str) -> EmbeddedResource:
        """Open the sales report of a quarter."""
        contents = TextResourceContents(
            uri=REPORT_URI, mime_type="text/csv", text="region,total\nnorth,46550"
        )
        return EmbeddedResource(type="resource", resource=contents)

    @server.tool()
    def download_archive() -> EmbeddedResource:
        """Download the reports archive."""
        blob = BlobResourceContents(
            uri="file:///reports.zip", mime_type="application/zip", blob=_b64(bytes(300))
        )
        return EmbeddedResource(type="resource", resource=blob)

    @server.tool()
    def export_report() -> EmbeddedResource:
        """Export the Q1 report as a CSV blob."""
        blob = BlobResourceContents(
            uri="file:///q1.csv",
            mime_type="text/csv; charset=utf-8",
            blob=_b64(b"region,total\nnorth,46550\n"),
        )
        return EmbeddedResource(type="resource", resource=blob)

    @server.tool()
    def chart() -> ImageContent:
        """Draw the sales chart."""
        return ImageContent(type="image", data=_b64(PIXELS), mime_type="image/png")

    @server.tool()
    def jingle() -> AudioContent:
        """Play the sales jingle."""
        return AudioContent(type="audio", data=_b64(SOUND), mime_type="audio/wav")

    @server.tool()
    def totals() -> CallToolResult:
        """Sales totals by region, as structured data."""
        return CallToolResult(content=[], structured_content={"north": 46550, "south": 38200})

    return server


if __name__ == "__main__":
    serve(lambda _a: build())
