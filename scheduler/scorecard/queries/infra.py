"""Configurations whose every done trial was an infrastructure error, with the commonest reason."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from mcp_farm.scheduler.scorecard.queries.columns import config_prompt

INFRA_ONLY = f"""
select model_id, {config_prompt()} as config, prompt_id, toolset, count(*) as trials
from trial
where sweep_id = :sweep and status = 'done'
group by model_id, prompt_id, toolset
having sum(case when outcome = 'infra_error' then 1 else 0 end) = count(*)
order by model_id, config
"""

COMMON_DETAIL = """
select detail, count(*) as n from trial
where sweep_id = :sweep and model_id = :model and prompt_id = :prompt and toolset = :toolset
group by detail order by n desc, detail limit 1
"""


def infra_only_configs(engine: Engine, sweep_id: str) -> list[tuple[Any, str]]:
    """Each such configuration (`model_id`, `config`, `trials`) with its most common detail,
    as recorded ("" when none was)."""
    found = []
    with engine.connect() as conn:
        for row in conn.execute(text(INFRA_ONLY), {"sweep": sweep_id}).all():
            params = {
                "sweep": sweep_id,
                "model": row.model_id,
                "prompt": row.prompt_id,
                "toolset": row.toolset,
            }
            found.append((row, conn.execute(text(COMMON_DETAIL), params).scalar() or ""))
    return found
