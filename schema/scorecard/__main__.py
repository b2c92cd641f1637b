"""The published schema: `python -m mcp_farm.schema.scorecard > docs/scorecard.schema.json`."""

from __future__ import annotations

import json

from mcp_farm.schema.scorecard.card import Scorecard


def main() -> None:
    print(json.dumps(Scorecard.model_json_schema(), indent=2))


if __name__ == "__main__":  # imported (a test loads every module), it prints nothing
    main()
