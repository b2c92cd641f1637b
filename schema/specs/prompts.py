"""How the agent is prompted: prompt configs, sampling, few-shot examples, tool selection."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from mcp_farm.schema.parse.strict import Strict
from mcp_farm.schema.specs.environment import KeyedByEnvironment
from mcp_farm.schema.vocab import ToolMode

ToolNaming = Literal["plain", "server_prefixed"]


class FewShot(Strict):
    user: str
    assistant: str


class GenerationParams(Strict):
    temperature: float = Field(default=0.0, ge=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    max_tokens: int = Field(default=384, ge=1)
    seed: int | None = None


LOCAL_EMBEDDING = "local"
"""`select.model` naming the embedding model that ships inside a package (the `embed` extra)."""


SELECTION_VERSION = 2
"""Version of how tools are selected (workers/selection/): a prompt config's `select:` carries
it once loaded, so a change gives selecting trials new ids and no other trial's. 2: BM25 drops
stop words, score ties are broken by the trial's seed (not the list's order), one selection
has a time limit (`timeout_s`)."""


class Selection(KeyedByEnvironment):
    """A prompt config's `select:`: show the model only the k tools a retriever ranks highest
    for each user message (docs/robustness.md)."""

    method: Literal["bm25", "embedding"]
    """`bm25`: BM25 over each tool's name, description and parameter names; `embedding`: the
    cosine similarity of the message's embedding to each tool's (the same text)."""
    k: int = Field(default=5, ge=1)
    """How many tools the model is shown."""
    model: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """`embedding` only: the embedding model's name at `endpoint`, or `local` for the small
    model that ships inside a package (multilingual-e5-small, 4-bit; no endpoint, no PyTorch)."""
    endpoint: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """`embedding` with a named model: base URL of an OpenAI-compatible API (…/v1); the farm
    posts to its `/embeddings`."""
    api_key_env: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """The environment variable holding the embeddings endpoint's key, if it needs one; read
    by the worker when it calls the endpoint, never stored."""
    timeout_s: float = Field(default=60.0, gt=0, exclude_if=lambda v: v == 60.0)
    """The longest one user message's selection may take (embedding the tool list included);
    past it the trial is an `infra_error` naming the selector. Left out at 60."""
    version: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """SELECTION_VERSION, set where a prompt config is loaded (`load_prompt`); None, and left
    out, on payloads recorded before it was kept."""

    @model_validator(mode="after")
    def _method_fields(self) -> Selection:
        named = [f for f in ("model", "endpoint", "api_key_env") if getattr(self, f) is not None]
        if self.method == "bm25" and named:
            raise ValueError(f"`{named[0]}` belongs to `method: embedding`; bm25 takes only `k`")
        if self.method != "embedding":
            return self
        if self.model is None:
            raise ValueError(
                "`method: embedding` needs `model`: the model's name at `endpoint`, or "
                f"`{LOCAL_EMBEDDING}` for the bundled one"
            )
        if self.model == LOCAL_EMBEDDING and self.endpoint is not None:
            raise ValueError(f"`model: {LOCAL_EMBEDDING}` runs in the worker; drop `endpoint`")
        if self.model != LOCAL_EMBEDDING and self.endpoint is None:
            raise ValueError(
                f"`model: {self.model}` needs `endpoint`, the base URL of an OpenAI-compatible "
                f"API (…/v1), or use `model: {LOCAL_EMBEDDING}`"
            )
        return self


class PromptConfig(Strict):
    """How the agent is prompted: system prompt, tool-calling mode, examples, sampling."""

    id: str
    version: int = Field(ge=1)
    mode: ToolMode
    system_prompt: str
    tool_naming: ToolNaming = "plain"
    """`plain`: tools shown by their own name; `server_prefixed`: as `server__tool`."""
    few_shot: list[FewShot] = Field(default_factory=list)
    generation: GenerationParams = Field(default_factory=GenerationParams)
    show_annotations: bool = Field(default=False, exclude_if=lambda v: v is False)
    """Show each tool's annotations (`readOnlyHint`, `destructiveHint`) to the model, as a
    line after its description; left out (false), the model sees none, as most clients show
    none. Left out of the payload when false, so trials without it keep their ids."""
    select: Selection | None = Field(default=None, exclude_if=lambda v: v is None)
    """Tool selection before the model (docs/robustness.md); None: every tool is shown. Left
    out when unset, so configs without it keep their ids."""
