"""The statistics behind scorecards: rates with intervals, percentiles, significance, judge variance. No database."""
