"""Terminal views: scorecards, answer quality, a sweep's progress and the nodes, as Rich tables and plain lines."""
