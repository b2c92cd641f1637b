"""SQL expressions that every scorecard query shares: the configuration label of a trial."""

from __future__ import annotations


def config_prompt(table: str = "") -> str:
    """SQL for a trial's configuration label beside its model: the prompt config, and its tool
    set when it has one (`native+symbols`). Every scorecard row, comparison and report groups
    on it, so tool sets are compared exactly as prompt configs are."""
    t = f"{table}." if table else ""
    return f"({t}prompt_id || case when {t}toolset = '' then '' else '+' || {t}toolset end)"


CONFIG = config_prompt()
