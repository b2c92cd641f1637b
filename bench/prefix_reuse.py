"""Time the quickstart spends in the bundled model, with and without reusing the prompt it
has already read.

    .venv/bin/python -m bench.prefix_reuse [--sweep scenarios/sweeps/quickstart.yaml]

Runs the sweep embedded twice in this one process, each time into a fresh SQLite file: first
with the local adapter resetting llama.cpp's context before every completion (every prompt read
from its first token), then keeping the evaluated prefix (only what follows the part the new
prompt shares with the last one is read). The model is loaded before either run, so neither
pays for loading it. Prints, for each run, the wall time, the time in the model (the trials'
`model_s`, summed), the pass rate of each prompt configuration, and whether the two runs ended
every trial with the same outcome.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table
from sqlalchemy import text
from sqlalchemy.engine import Engine

from mcp_farm.scheduler.submission.embedded import run_embedded
from mcp_farm.scheduler.submission.expand import expand, load_sweep
from mcp_farm.schema import Settings, get_settings
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.workers.model.local import BUNDLED, LocalClient, _load, bundled_path

ROOT = Path(__file__).resolve().parent.parent
console = Console()


def _warm(sweep_path: Path, settings: Settings) -> None:
    """Load every bundled model the sweep uses, so neither timed run pays for it."""
    for target in load_sweep(sweep_path).models:
        if target.adapter == "local" and target.model in BUNDLED:
            spec = BUNDLED[target.model]
            path = bundled_path(target.model, settings.model_cache_dir)
            chat_format = target.pins.get("chat_format", spec.chat_format)
            _load(str(path), chat_format, 4096, settings.local_threads)


def _run(sweep_path: Path, reuse: bool, folder: Path) -> tuple[float, Engine, str]:
    settings = get_settings().model_copy(update={"data_dir": folder, "database_url": None})
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    plan = expand(load_sweep(sweep_path), str(sweep_path))
    LocalClient.reuse_prefix = reuse
    started = time.perf_counter()
    run_embedded(plan=plan, settings=settings, engine=engine, console=Console(quiet=True))
    return time.perf_counter() - started, engine, plan.sweep_id


def _trials(engine: Engine, sweep_id: str) -> dict[tuple[str, str, int], tuple[str, str, float]]:
    """(scenario, prompt config, repetition) → (outcome, stop reason, model seconds)."""
    rows = engine.connect().execute(
        text(
            "select scenario_id, prompt_id, repetition, outcome, stop_reason, "
            "coalesce(model_s, 0) from trial where sweep_id = :s"
        ),
        {"s": sweep_id},
    )
    return {(r[0], r[1], r[2]): (r[3], r[4], r[5]) for r in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", type=Path, default=ROOT / "scenarios/sweeps/quickstart.yaml")
    args = parser.parse_args()
    _warm(args.sweep, get_settings())
    found = {}
    with tempfile.TemporaryDirectory() as scratch:
        for reuse in (False, True):
            folder = Path(scratch) / ("reuse" if reuse else "fresh")
            folder.mkdir()
            console.print(f"running {args.sweep.name} with reuse {'on' if reuse else 'off'}…")
            wall, engine, sweep_id = _run(args.sweep, reuse, folder)
            found[reuse] = (wall, _trials(engine, sweep_id))
            engine.dispose()
    _print(found)


def _print(
    found: dict[bool, tuple[float, dict[tuple[str, str, int], tuple[str, str, float]]]],
) -> None:
    table = Table(title="quickstart: time in the model, prefix reuse off and on")
    table.add_column("prefix reuse")
    table.add_column("trials", justify="right")
    table.add_column("wall s", justify="right")
    table.add_column("model s", justify="right")
    table.add_column("pass rate by prompt config")
    table.add_column("outcomes")
    for reuse, (wall, trials) in found.items():
        model = sum(t[2] for t in trials.values())
        configs = sorted({k[1] for k in trials})
        rates = ", ".join(
            f"{c} {sum(1 for k, t in trials.items() if k[1] == c and t[0] == 'pass')}"
            f"/{sum(1 for k in trials if k[1] == c)}"
            for c in configs
        )
        outcomes = Counter(t[0] for t in trials.values())
        table.add_row(
            "on" if reuse else "off",
            str(len(trials)),
            f"{wall:.1f}",
            f"{model:.1f}",
            rates,
            ", ".join(f"{o} {n}" for o, n in outcomes.most_common()),
        )
    console.print(table)
    off, on = (sum(t[2] for t in found[r][1].values()) for r in (False, True))
    console.print(f"time in the model: {100 * (1 - on / off):.0f}% less with reuse")
    before, after = found[False][1], found[True][1]
    keys = [*before, *(k for k in after if k not in before)]
    differ = [k for k in keys if before.get(k, ("", ""))[:2] != after.get(k, ("", ""))[:2]]
    console.print(
        f"{len(differ)} trial(s) ended differently: {', '.join(map(str, differ[:10]))}"
        if differ
        else "every trial ended the same way in both runs"
    )


if __name__ == "__main__":
    main()
