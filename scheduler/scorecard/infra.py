"""Configurations that measured nothing: every trial ended as an infrastructure error.

Scorecards leave infra_error trials out, so such a configuration shows as an empty row and the
run looked fine. The embedded run names each one with the most common reason and exits non-zero.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Engine

from mcp_farm.scheduler.scorecard.latency import config_prompt
from mcp_farm.schema import mask_url

DETAIL_CHARS = 300

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


@dataclass(frozen=True)
class InfraOnly:
    """One model × configuration whose every recorded trial was an infrastructure error."""

    model_id: str
    config: str
    """The prompt config, with its tool set when it has one (`code+symbols`)."""
    trials: int
    detail: str
    """The most common reason given, credentials masked."""

    def describe(self) -> str:
        return (
            f"all {self.trials} trial(s) of {self.model_id} · {self.config} ended as "
            f"infrastructure errors: {self.detail or 'no reason recorded'}"
        )


def infra_only(*, engine: Engine, sweep_id: str) -> list[InfraOnly]:
    """Every configuration of the sweep in which no trial got past an infrastructure error."""
    found = []
    with engine.connect() as conn:
        for row in conn.execute(text(INFRA_ONLY), {"sweep": sweep_id}).all():
            params = {
                "sweep": sweep_id,
                "model": row.model_id,
                "prompt": row.prompt_id,
                "toolset": row.toolset,
            }
            detail = conn.execute(text(COMMON_DETAIL), params).scalar() or ""
            # One line on the terminal: an endpoint's error body may span many.
            shown = mask_url(" ".join(detail.split()))[:DETAIL_CHARS]
            found.append(InfraOnly(row.model_id, row.config, int(row.trials), shown))
    return found
