"""The `farm` command line: one module per command group, sharing `common`."""
