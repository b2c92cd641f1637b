"""Building scorecards from stored trials: scans, latency, answer quality, comparisons, gates and the aggregate task."""
