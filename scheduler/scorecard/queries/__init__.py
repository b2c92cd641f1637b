"""The scorecard's SQL: every statement it runs, grouped by subject, and the functions that run them."""
