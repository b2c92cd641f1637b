"""Embedding selection: tools ranked by the cosine similarity of their text's embedding to the
user message's, the embeddings from an OpenAI-compatible `/embeddings` endpoint (or the
bundled model, workers/model/local/). A tool list's embeddings are computed once per process
and kept."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any, Protocol

import httpx
import numpy as np
import numpy.typing as npt

from mcp_farm.schema import digest, mask_secrets, mask_url, remember_secret
from mcp_farm.schema.specs import Selection
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.model.toolspec import ToolSpec
from mcp_farm.workers.selection.bm25 import tool_text

CACHED_LISTS = 64
"""Tool lists whose embeddings a process keeps (least recently used dropped first): a sweep's
levels and tool sets give a few dozen lists, each reused by every trial that shows it."""
BATCH = 128
"""Texts per `/embeddings` request."""
TIMEOUT_S = 60.0

Vectors = npt.NDArray[np.floating[Any]]


class Embedder(Protocol):
    """Turns texts into vectors; `key` names the model (and endpoint) for the cache."""

    key: str

    async def documents(self, texts: list[str]) -> Vectors: ...

    async def query(self, text: str) -> Vectors: ...


_CACHE: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
_CACHE_LOCK = threading.Lock()
embedded_lists = 0
"""How many tool lists this process has embedded (the cache's misses); tests read it."""


def _unit(rows: Vectors) -> Vectors:
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return np.asarray(rows / np.where(norms == 0, 1.0, norms), dtype=np.float32)


async def tool_vectors(embedder: Embedder, tools: list[ToolSpec]) -> Vectors:
    """The unit embeddings of `tools`' texts, from the cache when this list was embedded."""
    global embedded_lists
    texts = [tool_text(t) for t in tools]
    key = (embedder.key, digest(texts))
    with _CACHE_LOCK:
        found = _CACHE.get(key)
        if found is not None:
            _CACHE.move_to_end(key)
            return found
    vectors = _unit(await embedder.documents(texts))
    with _CACHE_LOCK:
        embedded_lists += 1
        _CACHE[key] = vectors
        while len(_CACHE) > CACHED_LISTS:
            _CACHE.popitem(last=False)
    return vectors


class EmbeddingRanker:
    """The `embedding` method as a Ranker: cosine similarity of message and tool."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    async def scores(self, query: str, tools: list[ToolSpec]) -> list[float]:
        if not tools:
            return []
        docs = await tool_vectors(self.embedder, tools)
        asked = _unit(await self.embedder.query(query))
        return [float(s) for s in docs @ asked]


class EndpointEmbedder:
    """An OpenAI-compatible embeddings endpoint (`POST {endpoint}/embeddings`)."""

    def __init__(self, how: Selection) -> None:
        assert how.endpoint is not None and how.model is not None  # Selection validates it
        self.url = how.endpoint.rstrip("/") + "/embeddings"
        self.model = how.model
        self.key = f"{how.endpoint}|{how.model}"
        secret = os.environ.get(how.api_key_env, "") if how.api_key_env else ""
        remember_secret(secret)  # masked wherever it turns up: an endpoint may echo it back
        self.headers = {"Authorization": f"Bearer {secret}"} if secret else {}

    async def documents(self, texts: list[str]) -> Vectors:
        parts = [await self._embed(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)]
        return np.vstack(parts)

    async def query(self, text: str) -> Vectors:
        return np.asarray((await self._embed([text]))[0], dtype=np.float32)

    async def _embed(self, texts: list[str]) -> Vectors:
        body = {"model": self.model, "input": texts}
        where = mask_url(self.url)
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT_S) as client:
                response = await client.post(self.url, json=body, headers=self.headers)
        except httpx.HTTPError as exc:
            raise InfraError(f"embeddings endpoint {where} unreachable: {exc!r}") from None
        if response.status_code >= 400:
            raise InfraError(
                f"embeddings endpoint {where} answered {response.status_code}: "
                f"{mask_secrets(response.text[:300])}"
            )
        return _vectors(response, len(texts), where)


def _vectors(response: httpx.Response, count: int, where: str) -> Vectors:
    """The `data[].embedding` of an embeddings reply, in input order; InfraError when the
    reply is not one (the endpoint's fault, never the model's)."""
    try:
        data = sorted(response.json()["data"], key=lambda d: int(d.get("index", 0)))
        rows = np.array([d["embedding"] for d in data], dtype=np.float32)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InfraError(f"embeddings endpoint {where} gave no embeddings: {exc!r}") from None
    if rows.ndim != 2 or len(rows) != count:
        raise InfraError(
            f"embeddings endpoint {where} gave {len(rows)} embeddings for {count} texts"
        )
    return rows
