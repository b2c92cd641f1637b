"""Who and what produced a trial: versions, commit, host."""

from __future__ import annotations

import platform
import socket
import subprocess
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from mcp_farm.schema import (
    Settings,
    TrialProvenance,
    TrialSpec,
)


@lru_cache(maxsize=16)
def _version(package: str) -> str:
    # Read once per process: a lookup parses the package's metadata file (0.7 ms of every
    # trial), and the code a process runs is the version installed when it started anyway.
    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


@lru_cache(maxsize=1)
def git_commit() -> str:
    """The commit of the farm's source tree, or `unknown` outside a checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def versions() -> dict[str, str]:
    """The versions a worker node reports when it enrols."""
    packages = ("mcp-farm", "mcp", "celery", "llama-cpp-python")
    return {p: _version(p) for p in packages} | {
        "python": platform.python_version(),
        "git_commit": git_commit(),
    }


def provenance(spec: TrialSpec, settings: Settings, model_pins: dict[str, str]) -> TrialProvenance:
    return TrialProvenance(
        farm_version=_version("mcp-farm"),
        git_commit=git_commit(),
        host=socket.gethostname(),
        node=settings.node_name,
        worker_tag=settings.worker_tag,
        python=platform.python_version(),
        mcp_version=_version("mcp"),
        scenario_version=spec.scenario.version,
        prompt_version=spec.prompt.version,
        model_pins={**spec.model.pins, **model_pins},
        time_scale=spec.model.time_scale,
        request_timeout_s=spec.model.request_timeout_s,
        reply_limit_s=spec.model.reply_limit_s,
        reply_clock=spec.model.reply_clock,
    )
