"""How often a score tie decides BM25's selection, and its recall at 1, 3, 5 and 10, on the basic
suite at each description and tool-count level, through real trials.

    .venv/bin/python -m bench.selection [--counts 0 10 50] [--descriptions as_is stripped]

Each of the basic suite's scenarios runs once per level with the `native-bm25` prompt config
and a scripted agent that makes the expected calls (so nothing waits on a model), on real
fixture servers and the distractor server, in a throw-away data folder. Every selection each
trial records (provenance `selections`) is counted: how many a tie decided (tools scored the
same as the last one shown, so the trial's seed chose), the mean recall@n over messages that
called for a tool, and the slowest selection.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import anyio
from rich.console import Console
from rich.table import Table

from mcp_farm.scenarios import load_prompt, load_suite
from mcp_farm.schema import SelectionTurn, Settings, TrialSpec, get_settings
from mcp_farm.schema.specs import ToolListLevel
from mcp_farm.workers.trial import execute_trial
from tests.helpers import ideal_script, trial

CUTS = (1, 3, 5, 10)


def turns(level: ToolListLevel, settings: Settings) -> list[SelectionTurn]:
    """Every selection of the basic suite's trials at `level`."""
    prompt = load_prompt("native-bm25")
    found: list[SelectionTurn] = []
    for scenario in load_suite("basic").scenarios:
        spec = trial(scenario, ideal_script(scenario), prompt=prompt)
        payload = spec.model_dump(exclude={"trial_id"}) | {"tool_list": level.model_dump()}
        result = anyio.run(execute_trial, TrialSpec.model_validate(payload), settings)
        found += result.provenance.selections or []
    return found


def row(level: ToolListLevel, found: list[SelectionTurn]) -> list[str]:
    ranked = [t.ranks for t in found if t.ranks]
    recall = [
        sum(sum(1 for r in ranks if r is not None and r <= k) / len(ranks) for ranks in ranked)
        / len(ranked)
        if ranked
        else None
        for k in CUTS
    ]
    tied = sum(t.tied for t in found)
    slowest = max((t.seconds for t in found), default=0.0)
    return [
        level.descriptions,
        str(level.tool_count),
        str(len(found)),
        f"{tied} ({100 * tied / len(found):.0f}%)" if found else "–",
        *("–" if r is None else f"{100 * r:.0f}%" for r in recall),
        f"{slowest * 1000:.1f} ms",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[0, 10, 50])
    parser.add_argument("--descriptions", nargs="+", default=["as_is", "stripped"])
    args = parser.parse_args()
    table = Table(title="BM25 selection (k = 5) on the basic suite")
    heads = ["descriptions", "tools", "selections", "tie decided"]
    for head in [*heads, *(f"recall@{k}" for k in CUTS), "slowest"]:
        table.add_column(head, justify="left" if head == "descriptions" else "right")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        settings = get_settings().model_copy(
            update={"data_dir": folder, "database_url": f"sqlite:///{folder / 'bench.sqlite'}"}
        )
        for words in args.descriptions:
            for count in args.counts:
                level = ToolListLevel.at(count, words, "as_is")
                table.add_row(*row(level, turns(level, settings)))
    Console().print(table)


if __name__ == "__main__":
    main()
