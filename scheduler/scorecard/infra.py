"""Configurations that measured nothing: every trial ended as an infrastructure error.

Scorecards leave infra_error trials out, so such a configuration shows as an empty row and the
run looked fine. The embedded run names each one with the most common reason and exits non-zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_farm.scheduler.scorecard.queries.infra import infra_only_configs
from mcp_farm.schema import mask_url

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

DETAIL_CHARS = 300


@dataclass(frozen=True)
class InfraOnly:
    """One model × configuration whose every recorded trial was an infrastructure error."""

    model_id: str
    config: str
    """The prompt config, with its tool set when it has one (`code+symbols`)."""
    trials: int
    detail: str
    """The most common reason given, credentials masked."""

    def warning(self) -> str:
        return (
            f"all {self.trials} trial(s) of {self.model_id} · {self.config} ended as "
            f"infrastructure errors: {self.detail or 'no reason recorded'}"
        )


def infra_only(*, engine: Engine, sweep_id: str) -> list[InfraOnly]:
    """Every configuration of the sweep in which no trial got past an infrastructure error."""
    found = []
    for row, detail in infra_only_configs(engine, sweep_id):
        # One line on the terminal: an endpoint's error body may span many.
        shown = mask_url(" ".join(detail.split()))[:DETAIL_CHARS]
        found.append(InfraOnly(row.model_id, row.config, int(row.trials), shown))
    return found
