"""What the in-process model reads in `native` mode: the tools written into its system text the
way llama.cpp's server does for a chat template without tool support, so a tool-list level's
descriptions reach it; and a prompt that leaves no room for the reply ends the trial as
`context_overflow` before the model reads it."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from mcp_farm.scenarios import load_prompt, load_suite
from mcp_farm.schema import Message, ModelTarget, Settings
from mcp_farm.workers.grading.grade import grade
from mcp_farm.workers.model.encode import GENERIC_REPLY, GENERIC_TOOLS
from mcp_farm.workers.model.local import (
    LocalClient,
    chat_template,
    renders_tools,
)
from mcp_farm.workers.model.toolspec import ToolSpec

READ = ToolSpec(
    shown_name="read_file",
    server="filesystem",
    tool="read_file",
    description="Read the complete contents of a file from the user's home folder.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)
LIST = ToolSpec(
    shown_name="list_directory",
    server="filesystem",
    tool="list_directory",
    description="List the files and folders inside a directory.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)
REQUEST = [
    Message(role="system", content="You are a helpful assistant."),
    Message(role="user", content="What is on my desktop?"),
]


def _client(tmp_path: Path, chat_format: str) -> LocalClient:
    """A client of a stand-in GGUF with a pinned chat format: nothing is loaded or read."""
    gguf = tmp_path / "stand-in.gguf"
    gguf.write_bytes(b"")
    target = ModelTarget(
        id="m", adapter="local", model=str(gguf), pins={"chat_format": chat_format}
    )
    return LocalClient(target, tmp_path)


@pytest.mark.parametrize("chat_format", ["gemma", "chatml"])
def test_a_native_prompt_carries_each_tools_name_description_and_schema(
    tmp_path: Path, chat_format: str
) -> None:
    client = _client(tmp_path, chat_format)
    chat = client._messages(REQUEST, "native", [READ, LIST])
    shown = chat[0]["content"]
    assert shown.startswith("You are a helpful assistant.")
    assert GENERIC_REPLY in shown and GENERIC_TOOLS in shown
    for tool in (READ, LIST):
        assert f'"name": "{tool.shown_name}"' in shown
        assert tool.description in shown
    assert '"path": {' in shown
    assert client.pins["tool_rendering"] == "generic"
    # Without tools nothing is added: the prompt is the one a tool-less trial always had.
    assert "Respond in JSON" not in client._messages(REQUEST, "native", [])[0]["content"]


@pytest.mark.parametrize("mode", ["native", "json", "grammar"])
def test_the_descriptions_axis_changes_what_the_bundled_model_reads_in_every_mode(
    tmp_path: Path, mode: str
) -> None:
    from mcp_farm.workers.model.encode import opening_messages

    client = _client(tmp_path, "gemma")
    prompt = load_prompt(mode)
    # As a level rewrites them (workers/mcp/toollist.py): as listed, stripped, shortened.
    levels: dict[str, Callable[[str], str]] = {
        "as_is": lambda text: text,
        "stripped": lambda _text: "",
        "first_sentence": lambda text: text.split(" from ")[0],
    }
    read: dict[str, str] = {}
    for how, rewrite in levels.items():
        tools = [replace(t, description=rewrite(t.description)) for t in (READ, LIST)]
        opening = opening_messages(prompt, "What is on my desktop?", tools)
        read[how] = client._messages(opening, prompt.mode, tools)[0]["content"]
    assert len(set(read.values())) == 3
    assert READ.description in read["as_is"] and READ.description not in read["stripped"]


def test_a_template_that_renders_tools_is_told_from_one_that_does_not() -> None:
    pytest.importorskip("llama_cpp")
    tool_aware = (
        "{% if tools %}{% for t in tools %}{{ t.function.name }}\n{% endfor %}{% endif %}"
        "{% for m in messages %}{{ m.content }}{% endfor %}"
    )
    plain = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    assert renders_tools(tool_aware)
    assert not renders_tools(plain)
    assert not renders_tools("{{ raise_exception('no tools here') }}")


def test_a_graded_context_overflow_is_its_own_outcome() -> None:
    scenario = next(s for s in load_suite("basic").scenarios if s.id == "fs.list-desktop")
    graded = grade(scenario, [], None, "context_overflow", {}, "the prompt is 5000 tokens")
    assert (graded.outcome, graded.detail) == ("context_overflow", "the prompt is 5000 tokens")


def _needs_bundled() -> None:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("llama-cpp-python is not installed; scripts/test.sh installs it")
        pytest.skip("llama-cpp-python not installed (run scripts/setup.sh)")


@pytest.mark.slow
def test_the_bundled_models_templates_render_no_tools_so_they_get_the_generic_rendering(
    settings: Settings,
) -> None:
    _needs_bundled()
    target = ModelTarget(id="g", adapter="local", model="gemma3-270m")
    client = LocalClient(target, settings.model_cache_dir, threads=settings.local_threads)
    template = chat_template(str(client.path))
    assert template is None or not renders_tools(template)
    assert client.pins["tool_rendering"] == "generic"


@pytest.mark.slow
def test_a_tool_list_that_leaves_no_room_for_the_reply_is_refused_before_the_model_reads_it(
    settings: Settings,
) -> None:
    _needs_bundled()
    target = ModelTarget(id="g", adapter="local", model="gemma3-270m")
    small = LocalClient(
        target, settings.model_cache_dir, n_ctx=1024, threads=settings.local_threads
    )
    many = [
        ToolSpec(
            shown_name=f"tool_{i}",
            server="s",
            tool=f"tool_{i}",
            description=f"Tool number {i} does one thing for the user's files.",
            input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
        )
        for i in range(20)
    ]
    native = load_prompt("native")
    prompt = native.model_copy(
        update={"generation": native.generation.model_copy(update={"max_tokens": 8})}
    )
    reply = anyio.run(small.complete, REQUEST, many, prompt, 1)
    assert reply.stop == "context_overflow", reply
    assert "does not fit the model's context of 1024" in reply.text
    assert reply.tokens.completion == 0 and not reply.calls
    # Two tools fit: the same client replies (8 tokens, read or not).
    fits = anyio.run(small.complete, REQUEST, many[:2], prompt, 1)
    assert fits.stop is None
