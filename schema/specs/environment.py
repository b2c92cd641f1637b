"""Environment variables in specs: their names, and the refusal of a secret written into one."""

from __future__ import annotations

import re
from typing import Any

from pydantic import model_validator

from mcp_farm.schema.parse.strict import Strict
from mcp_farm.schema.redact import has_credentials

ENV_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class KeyedByEnvironment(Strict):
    """A spec that reaches an endpoint: a key in it is only ever an environment variable's
    name (`api_key_env`), refused on the raw mapping so the error never quotes the value
    (`secret_problem`)."""

    @model_validator(mode="before")
    @classmethod
    def _no_literal_secrets(cls, data: Any) -> Any:
        problem = secret_problem(data)
        if problem is not None:
            raise ValueError(problem)
        return data


LITERAL_SECRETS = ("api_key", "apikey", "key", "token", "password", "secret", "authorization")
"""Fields a model target refuses: a key written into a sweep file would be stored with every
trial. The target names the environment variable that holds it instead (`api_key_env`)."""


ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def secret_problem(data: Any) -> str | None:
    """Why an endpoint's raw mapping (a model target, an embeddings `select:`) would store a
    secret with every trial; None when it would not. Checked on the raw mapping so that the
    error never quotes the value it refuses (a field error would show it on the terminal and
    in CI logs)."""
    if not isinstance(data, dict):
        return None
    literal = [k for k in data if str(k).lower() in LITERAL_SECRETS]
    if literal:
        return (
            f"`{literal[0]}` would store a secret with every trial: put the key in an "
            "environment variable and name it with `api_key_env: OPENAI_API_KEY`"
        )
    env = data.get("api_key_env")
    if env is not None and not (isinstance(env, str) and ENV_NAME.fullmatch(env)):
        return (
            "`api_key_env` takes the name of an environment variable (upper case, e.g. "
            "OPENAI_API_KEY), not the key itself"
        )
    endpoint = data.get("endpoint")
    if isinstance(endpoint, str) and has_credentials(endpoint):
        return (
            "`endpoint` carries a password or key, which would be stored with every trial: "
            "give the bare base URL (…/v1) and the key through `api_key_env`"
        )
    return None
