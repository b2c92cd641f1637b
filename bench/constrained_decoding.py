"""Decoding speed of the bundled model's replies: free JSON, the grammar applied to the whole
vocabulary (llama-cpp-python's own path), and the grammar checked against the best tokens first.

    .venv/bin/python -m bench.constrained_decoding [--rounds 3] [--max-tokens 96]

The same requests and tools in each path, run interleaved (each round runs every request in
every path, the paths' order rotating), at the prompt configurations' own sampling (native:
temperature 0.3). Free JSON is the `json` prompt configuration (tools listed in the prompt, no
grammar); both constrained paths are `native` (one tool call or a response, held to the tool
set's JSON schema). Speed is decoding only: tokens after the first, over the time after the
first (the prompt is read before the first token); on a machine shared with other work each
path's median reply is compared, and the time in the sampler (what the paths differ in) is
shown per token. Prints a table, lazy ÷ free, and whether the two constrained paths wrote the
same text for every request.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from mcp_farm.scenarios import load_prompt
from mcp_farm.schema import ModelTarget, PromptConfig, get_settings
from mcp_farm.workers.model.encode import opening_messages
from mcp_farm.workers.model.local import LocalClient, _load, native_schema, schema_grammar
from mcp_farm.workers.model.toolspec import ToolSpec

console = Console()

PATHS = ("free JSON", "full grammar", "lazy grammar")

REQUESTS = (
    "What files are on my Desktop?",
    "Find the notes that mention the quarterly budget.",
    "Open ~/Documents/todo.txt and tell me what is on it.",
    "Say hello and tell me what you can help me with.",
)

TOOLS = [
    ToolSpec(
        shown_name="list_directory",
        server="filesystem",
        tool="list_directory",
        description="List the files and folders in a directory.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    ),
    ToolSpec(
        shown_name="search_files",
        server="filesystem",
        tool="search_files",
        description="Search file contents for a phrase.",
        input_schema={
            "type": "object",
            "properties": {"query": {"type": "string"}, "path": {"type": "string"}},
            "required": ["query"],
        },
    ),
    ToolSpec(
        shown_name="read_file",
        server="filesystem",
        tool="read_file",
        description="Read a text file.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    ),
]


@dataclass
class Tally:
    """Decoding measured for one path."""

    rates: list[float] = field(default_factory=list)
    """Tokens/s of each reply's decoding."""
    tokens: int = 0
    sampling_s: float = 0.0
    """Time in `Llama.sample` (the part the paths differ in), over every reply."""
    shortlist: int = 0
    wider: int = 0
    full: int = 0
    texts: dict[str, str] = field(default_factory=dict)

    def median(self) -> float:
        return statistics.median(self.rates) if self.rates else 0.0


class SampleClock:
    """Times `Llama.sample` on one model instance."""

    def __init__(self, llm: Any) -> None:
        self.seconds = 0.0
        inner = llm.sample

        def sample(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        llm.sample = sample


def _reply(
    llm: Any, client: LocalClient, prompt: PromptConfig, request: str, max_tokens: int, lazy: bool
) -> tuple[str, int, float]:
    """One streamed reply: text, tokens after the first, seconds after the first."""
    messages = client._messages(opening_messages(prompt, request, TOOLS), prompt.mode)
    kwargs: dict[str, Any] = {}
    if prompt.mode == "native":
        kwargs["grammar"] = schema_grammar(native_schema(TOOLS))
    llm.lazy_grammar = lazy
    llm.reset()
    pieces: list[str] = []
    first = 0.0
    for n, chunk in enumerate(
        llm.create_chat_completion(
            messages=messages,
            temperature=prompt.generation.temperature,
            top_p=prompt.generation.top_p,
            max_tokens=max_tokens,
            seed=1,
            stream=True,
            **kwargs,
        )
    ):
        if n == 0:
            first = time.perf_counter()
        pieces.append(chunk["choices"][0]["delta"].get("content") or "")
    # Chunks are tokens, less the role chunk and the closing chunk.
    return "".join(pieces), max(len(pieces) - 3, 0), time.perf_counter() - first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args()
    settings = get_settings()
    target = ModelTarget(id="bench", adapter="local", model="gemma3-270m", hardware="cpu")
    client = LocalClient(target, Path(settings.model_cache_dir), threads=settings.local_threads)
    llm = _load(str(client.path), client.chat_format, client.n_ctx, client.threads)
    prompts = {"free JSON": load_prompt("json"), "full grammar": load_prompt("native")}
    prompts["lazy grammar"] = prompts["full grammar"]
    tallies = {p: Tally() for p in PATHS}
    clock = SampleClock(llm)
    load_before = os.getloadavg()[0]
    for round_ in range(args.rounds):
        for i, request in enumerate(REQUESTS):
            shift = (round_ + i) % len(PATHS)
            for path in PATHS[shift:] + PATHS[:shift]:
                sampled = clock.seconds
                text, tokens, seconds = _reply(
                    llm, client, prompts[path], request, args.max_tokens, path == "lazy grammar"
                )
                tally = tallies[path]
                tally.rates.append(tokens / seconds if seconds else 0.0)
                tally.tokens += tokens + 1
                tally.sampling_s += clock.seconds - sampled
                steps = getattr(llm._sampler, "steps", None)
                if steps is not None:
                    tally.shortlist += steps.shortlist
                    tally.wider += steps.wider
                    tally.full += steps.full
                tally.texts.setdefault(f"{round_}:{i}", text)
    _print(tallies, load_before, os.getloadavg()[0])


def _print(tallies: dict[str, Tally], load_before: float, load_after: float) -> None:
    table = Table(title="bundled gemma3-270m: decoding speed by path")
    columns = (
        "path",
        "replies",
        "median tok/s",
        "÷ free",
        "best tok/s",
        "sampler ms/tok",
        "near/wider/all",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "path" else "right")
    free = tallies["free JSON"].median()
    for path, tally in tallies.items():
        decided = tally.shortlist + tally.wider + tally.full
        table.add_row(
            path,
            str(len(tally.rates)),
            f"{tally.median():.1f}",
            f"{tally.median() / free:.2f}" if free else "-",
            f"{max(tally.rates, default=0.0):.1f}",
            f"{1000 * tally.sampling_s / tally.tokens:.1f}" if tally.tokens else "-",
            f"{tally.shortlist}/{tally.wider}/{tally.full}" if decided else "-",
        )
    console.print(table)
    lazy, full = tallies["lazy grammar"], tallies["full grammar"]
    best = max(tallies["free JSON"].rates, default=0.0)
    console.print(
        f"lazy ÷ free: {lazy.median() / free:.2f} (medians), "
        f"{max(lazy.rates, default=0.0) / best:.2f} (best replies); full ÷ free: "
        f"{full.median() / free:.2f}, {max(full.rates, default=0.0) / best:.2f}; "
        f"load average {load_before:.1f} before, {load_after:.1f} after"
    )
    same = lazy.texts == full.texts
    console.print(
        "lazy and full grammar wrote the same text for every reply"
        if same
        else f"{sum(lazy.texts[k] != full.texts.get(k) for k in lazy.texts)} replies differ"
    )


if __name__ == "__main__":
    main()
