"""Before a sweep starts: does every model endpoint answer, and does it serve the model?

Without this check, a sweep pointed at a server that is not running ran every trial to an
infrastructure error and printed an empty scorecard. One `GET {endpoint}/models` per endpoint,
with a short timeout, catches that (and a model name the server does not know) before anything
is recorded. Only `openai` targets have an endpoint; `local` names are checked when the sweep
file is read, and, for a run in this process, whether this machine can load them
(`local_problems`); `agent` targets, for a run in this process, whether their command starts
here (`agent_problems`: on a farm, each worker checks its own); `scripted` needs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import httpx

from mcp_farm.schema import (
    LOCAL_MODELS,
    FarmError,
    ModelTarget,
    SweepSpec,
    mask_url,
    remember_secret,
)
from mcp_farm.schema.agent_check import command_problem, refusal

NOT_LISTED = (404, 405, 501)
"""Answers that mean the server has no model list (some OpenAI-compatible servers lack it)."""

SHOWN = 20
"""Served model ids named in an error, at most."""

ESCAPE = "or pass --no-preflight (FARM_PREFLIGHT=false) if only the workers can reach it"


class PreflightError(FarmError):
    """A model endpoint cannot serve the sweep: unreachable, refusing the key, or without the
    model. Nothing has been recorded when it is raised."""


@dataclass(frozen=True)
class Listing:
    """What an endpoint said about its models."""

    ids: list[str] | None
    """The model ids it serves; None when it does not list them."""
    note: str = ""
    """Why there is no list, for a warning."""


def targets_of(sweep: SweepSpec, adapter: str) -> list[ModelTarget]:
    """Every model of the sweep served by `adapter`: the agents, the judge and the simulated
    user."""
    targets = list(sweep.models)
    if sweep.judge is not None and sweep.judge.model is not None:
        targets.append(sweep.judge.model)
    if sweep.user_model is not None:
        targets.append(sweep.user_model.model)
    return [t for t in targets if t.adapter == adapter]


def openai_targets(sweep: SweepSpec) -> list[ModelTarget]:
    """Every model of the sweep that is reached over HTTP: the agents and the judge."""
    return targets_of(sweep, "openai")


def local_problems(sweep: SweepSpec) -> list[str]:
    """Why this machine cannot load the sweep's `local` models (agents and judge), one line
    each, naming the command that fixes it; empty when it can. Looks modules up without
    importing them, so it costs nothing when all is well."""
    local = targets_of(sweep, "local")
    if not local:
        return []
    if find_spec("llama_cpp") is None:
        names = ", ".join(sorted({t.id for t in local}))
        return [
            f"model {names}: the local adapter needs llama-cpp-python, which is not installed: "
            "run `bash scripts/setup.sh`"
        ]
    problems = []
    for target in local:
        package = LOCAL_MODELS.get(target.model)
        if package is not None and find_spec(package) is None:
            problems.append(
                f"model {target.id!r}: {target.model} ships in the package {package!r}, which "
                "is not installed: run `bash scripts/setup.sh`"
            )
        elif package is None and not Path(target.model).is_file():
            problems.append(f"model {target.id!r}: no GGUF file at {target.model}")
    return sorted(set(problems))


def check_agents_here(sweep: SweepSpec, environ: Mapping[str, str]) -> None:
    """PreflightError naming each agent target whose command cannot start on this machine, and
    what to do; nothing when all can. For a run in this process only: a missing command would
    end every trial of the target as an infra_error."""
    problems = [
        problem
        for target in targets_of(sweep, "agent")
        if target.agent is not None
        and (problem := command_problem(target, environ, "this machine")) is not None
    ]
    if problems:
        raise PreflightError(
            refusal(problems, "this machine", "pass --no-preflight (FARM_PREFLIGHT=false)")
        )


def check_endpoints(
    targets: list[ModelTarget],
    *,
    timeout_s: float,
    env: Mapping[str, str],
    transport: httpx.BaseTransport | None = None,
) -> list[str]:
    """Check each target's endpoint and model name; returns warnings for what could not be
    checked, raises PreflightError for the first target that cannot work.

    `env` is where API keys are looked up (the process environment, passed in by the CLI).
    """
    warnings: list[str] = []
    listings: dict[tuple[str, str | None], Listing] = {}
    with httpx.Client(timeout=timeout_s, transport=transport) as client:
        for target in targets:
            assert target.endpoint is not None  # the spec validator guarantees it
            # Asked once per endpoint and key, however many targets share them.
            key = (target.endpoint.rstrip("/"), target.api_key_env)
            if key not in listings:
                listings[key] = _list_models(client, target, env, timeout_s)
            listing = listings[key]
            if listing.ids is None:
                warnings.append(
                    f"model {target.id!r}: {listing.note}, so {target.model!r} was not checked"
                )
            elif not _served(target.model, listing.ids):
                raise PreflightError(_not_served(target, listing.ids))
    return list(dict.fromkeys(warnings))


def _list_models(
    client: httpx.Client, target: ModelTarget, env: Mapping[str, str], timeout_s: float
) -> Listing:
    assert target.endpoint is not None
    where = mask_url(target.endpoint)
    url = target.endpoint.rstrip("/") + "/models"
    key = env.get(target.api_key_env, "") if target.api_key_env else ""
    remember_secret(key)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = client.get(url, headers=headers)
    except httpx.TimeoutException:
        raise PreflightError(
            f"model {target.id!r}: the endpoint {where} did not answer within {timeout_s:g} s "
            f"(FARM_PREFLIGHT_TIMEOUT_S). Check that its server is up and reachable from here, "
            f"{ESCAPE}"
        ) from None
    except httpx.HTTPError as exc:
        raise PreflightError(
            f"model {target.id!r}: nothing answers at {where} ({_why(exc)}). Start the model "
            "server, or fix the endpoint (--endpoint, or `endpoint:` in the sweep file), "
            f"{ESCAPE}"
        ) from None
    if response.status_code in (401, 403):
        raise PreflightError(_refused(target, where, response.status_code, bool(key)))
    if response.status_code in NOT_LISTED:
        return Listing(None, f"{where} does not list its models (HTTP {response.status_code})")
    if response.status_code >= 400:
        return Listing(None, f"{where} answered HTTP {response.status_code} to GET /models")
    return _parse(response, where)


def _parse(response: httpx.Response, where: str) -> Listing:
    try:
        data = response.json()["data"]
        return Listing([str(item["id"]) for item in data])
    except (ValueError, KeyError, TypeError):
        return Listing(None, f"{where} answered GET /models with something other than a list")


def _why(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.ConnectError):
        text = str(exc).lower()
        return "connection refused" if "refused" in text else mask_url(str(exc)) or "no connection"
    return f"{type(exc).__name__}: {mask_url(str(exc))}"


def _served(name: str, ids: list[str]) -> bool:
    # Ollama lists `llama3:latest` and serves it as `llama3` too.
    return name in ids or f"{name}:latest" in ids


def _not_served(target: ModelTarget, ids: list[str]) -> str:
    assert target.endpoint is not None
    where = mask_url(target.endpoint)
    if not ids:
        return (
            f"model {target.id!r}: the endpoint {where} serves no model at all; load "
            f"{target.model!r} there first"
        )
    more = f" (and {len(ids) - SHOWN} more)" if len(ids) > SHOWN else ""
    shown = ", ".join(ids[:SHOWN]) + more
    return (
        f"model {target.id!r}: the endpoint {where} does not serve {target.model!r}; it serves "
        f"{shown}. Name one of them (--endpoint-model, or `model:` in the sweep file)"
    )


def _refused(target: ModelTarget, where: str, status: int, sent_key: bool) -> str:
    if target.api_key_env and sent_key:
        fix = f"the key in ${target.api_key_env} was refused: check it"
    elif target.api_key_env:
        fix = f"${target.api_key_env} is not set here: export it"
    else:
        fix = "name the variable that holds its key with `api_key_env:` in the sweep file"
    return (
        f"model {target.id!r}: the endpoint {where} refused the request (HTTP {status}); "
        f"{fix}, {ESCAPE}"
    )
