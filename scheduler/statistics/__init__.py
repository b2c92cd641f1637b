"""The statistics behind scorecards: rates with intervals, percentiles, significance, judge variance, the agent × user variance split. No database."""
