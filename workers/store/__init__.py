"""Writing results: trials and tool calls, idempotent on trial_id, and PostgreSQL's pipelined share of every trial."""
