"""Content search over a folder of documents, ranked by how often the query's words occur."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    serve,
)

WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def build(corpus: Path) -> MCPServer:
    docs = {
        p.relative_to(corpus).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(corpus.rglob("*"))
        if p.is_file()
    }
    server = MCPServer("search", instructions="Full-text search over the team's documents.")

    @server.tool()
    def search_documents(query: str, limit: int = 5) -> str:
        """Search the team's documents for words or phrases; returns matching document ids, best first."""
        terms = set(_words(query))
        if not terms:
            raise ToolError("the query has no words to search for")
        scored = []
        for doc_id, text in docs.items():
            words = _words(text)
            score = sum(words.count(t) for t in terms)
            if score:
                title = text.splitlines()[0].lstrip("# ").strip()
                scored.append((score, doc_id, title))
        scored.sort(key=lambda s: (-s[0], s[1]))
        if not scored:
            return "no documents match"
        return "\n".join(f"{doc_id}\t{title}" for _s, doc_id, title in scored[: max(1, limit)])

    @server.tool()
    def get_document(doc_id: str) -> str:
        """Return the full text of one document by its id (as listed by search_documents)."""
        key = doc_id.strip().lstrip("/")
        if key not in docs:
            raise ToolError(f"no document with id {doc_id!r}")
        return docs[key]

    return server


def _args(parser: argparse.ArgumentParser) -> None:
    default = Path(__file__).resolve().parent.parent / "fixtures" / "corpus"
    parser.add_argument("--corpus", type=Path, default=default)


if __name__ == "__main__":
    serve(lambda a: build(a.corpus), add_args=_args)
