"""The bundled model writes the same replies whether its grammar is checked against the best
tokens first or applied to the whole vocabulary at every token: a native tool call, a plain
response and a judge's verdict at temperature 0, and a tool call at the prompt configurations'
own temperature. Slow: it loads the real model and decodes every reply twice."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import load_prompt
from mcp_farm.schema import Message, ModelTarget, PromptConfig, Settings
from mcp_farm.workers.model.encode import opening_messages
from mcp_farm.workers.model.local import LocalClient, _load
from mcp_farm.workers.model.toolspec import Sampling, ToolSpec

pytestmark = [pytest.mark.slow]

TOOLS = [
    ToolSpec(
        shown_name=name,
        server="filesystem",
        tool=name,
        description=description,
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    )
    for name, description in [
        ("list_directory", "List the files and folders in a directory."),
        ("read_file", "Read a text file."),
    ]
]

VERDICT = {
    "type": "object",
    "properties": {
        "verdict": {"enum": ["pass", "fail"]},
        "reason": {"type": "string"},
    },
    "required": ["verdict", "reason"],
}


@pytest.fixture(scope="module")
def client() -> LocalClient:
    pytest.importorskip("llama_cpp")
    target = ModelTarget(id="gemma", adapter="local", model="gemma3-270m", hardware="cpu")
    settings = Settings()
    return LocalClient(target, settings.model_cache_dir, threads=settings.local_threads)


def _native(temperature: float) -> PromptConfig:
    prompt = load_prompt("native")
    generation = prompt.generation.model_copy(update={"temperature": temperature, "max_tokens": 48})
    return prompt.model_copy(update={"generation": generation})


def _both(client: LocalClient, call: Any) -> tuple[Any, Any]:
    """The same call with the grammar over the whole vocabulary, then checked lazily."""
    replies = []
    for lazy in (False, True):
        client.lazy_grammar = lazy
        replies.append(anyio.run(call))
    client.lazy_grammar = True
    return replies[0], replies[1]


@pytest.mark.parametrize(
    ("request_text", "temperature"),
    [
        ("What files are on my Desktop?", 0.0),
        ("Hello! Who are you?", 0.0),
        ("Open ~/notes/todo.txt and tell me what is on it.", 0.3),
    ],
)
def test_a_native_reply_is_the_same_with_the_lazy_grammar(
    client: LocalClient, request_text: str, temperature: float
) -> None:
    prompt = _native(temperature)
    messages = opening_messages(prompt, request_text, TOOLS)

    async def call() -> Any:
        return await client.complete(messages, TOOLS, prompt, seed=1)

    full, lazy = _both(client, call)
    assert (lazy.text, lazy.calls, lazy.format_error) == (full.text, full.calls, full.format_error)
    assert lazy.tokens == full.tokens


def test_a_judge_verdict_is_the_same_with_the_lazy_grammar(client: LocalClient) -> None:
    messages = [
        {"role": "system", "content": "You grade an assistant's answer. Reply in JSON."},
        {
            "role": "user",
            "content": "Question: what is on the Desktop? Answer: report.pdf and notes.txt. "
            "The Desktop holds report.pdf and notes.txt. Give your verdict and a reason.",
        },
    ]
    sampling = Sampling(temperature=0.0, max_tokens=48, seed=1)

    async def call() -> Any:
        return await client.complete_json(messages, VERDICT, sampling)

    full, lazy = _both(client, call)
    assert lazy.text == full.text
    assert lazy.text.startswith("{")


def test_a_schema_is_parsed_once_for_every_reply_that_uses_it(client: LocalClient) -> None:
    llm = _load(str(client.path), client.chat_format, client.n_ctx, client.threads)
    prompt = _native(0.0)
    prompt = prompt.model_copy(
        update={"generation": prompt.generation.model_copy(update={"max_tokens": 3})}
    )
    anyio.run(client.complete, opening_messages(prompt, "Hi.", TOOLS), TOOLS, prompt, 1)
    grammars = llm.grammars
    assert grammars is not None
    known, parses = set(grammars.parsed), grammars.parses
    for tools in (TOOLS, TOOLS[:1], TOOLS, TOOLS[:1]):
        messages: list[Message] = opening_messages(prompt, "List my Desktop.", tools)
        anyio.run(client.complete, messages, tools, prompt, 1)
    assert grammars.parses - parses == len(set(grammars.parsed) - known) == 1
