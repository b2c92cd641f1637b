"""The trial explorer: `farm view` (a read-only web app over the results database) and the
queries and renderings `farm trials` and `farm trial show` share with it."""

from mcp_farm.scheduler.view.filters import FilterError, TrialFilter

__all__ = ["FilterError", "TrialFilter"]
