"""BM25 tool selection: the k best tools in list order, and the recall of each selection."""

from __future__ import annotations

import anyio

from mcp_farm.schema.specs import Selection
from mcp_farm.workers.model.toolspec import ToolSpec
from mcp_farm.workers.selection import Selector
from mcp_farm.workers.selection.bm25 import bm25_ranks, words


def _tool(name: str, description: str) -> ToolSpec:
    return ToolSpec(
        shown_name=name,
        server="s",
        tool=name,
        description=description,
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    )


TOOLS = [
    _tool("send_email", "Send an email to a recipient."),
    _tool("read_file", "Read a text file and return its contents."),
    _tool("create_invoice", "Create an invoice in the company's records."),
    _tool("list_directory", "List the entries of a folder."),
]


def test_names_split_into_words() -> None:
    assert words("readFile list_directory") == ["read", "file", "list", "directory"]


def test_the_tool_whose_words_match_ranks_first() -> None:
    scores = bm25_ranks("please read the file todo.txt", TOOLS)
    assert max(range(len(TOOLS)), key=lambda i: scores[i]) == 1


def test_a_selection_keeps_k_tools_in_list_order_and_records_recall() -> None:
    selector = Selector(Selection(method="bm25", k=2), {t.shown_name: t for t in TOOLS})
    said = "read the file, then list the folder"
    kept = anyio.run(selector.select, said, ["read_file", "send_email"])
    assert list(kept) == ["read_file", "list_directory"]
    assert selector.recalls == [0.5]
    anyio.run(selector.select, "hello", [])
    assert selector.recalls == [0.5, None]
