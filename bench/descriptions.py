"""How many tool descriptions the `paraphrased` level changes, and whether it kept what must be
kept, on the bundled fixture servers and the third-party servers of scenarios/suites/thirdparty.yaml.

    .venv/bin/python -m bench.descriptions [--show]

Each server is started as a trial starts it and its tools are listed (the farm's control
tools aside, which no model is shown); every description is
paraphrased (workers/mcp/describe.py). A description counts as changed when its words differ
(case, spacing and punctuation aside). It counts as garbled when a span the paraphrase must
keep verbatim (a code span, quoted text, a URL, an abbreviation, a name like `read_file` or
`elicitation/create`, a number) does not come back as often as it was there. Prints, per
server, the descriptions, the share changed and the garbled ones; `--show` prints every
description that was left unchanged and every garbled one with its paraphrase. The
third-party servers need `bash scripts/setup.sh --dev` (they live in .tools/).
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from rich.console import Console
from rich.table import Table

from mcp_farm.scenarios import load_suite, server_catalog, servers_for
from mcp_farm.schema import ServerDef
from mcp_farm.schema.specs import DISTRACTOR_SERVER
from mcp_farm.workers.mcp.capture import is_control
from mcp_farm.workers.mcp.describe import paraphrase, verbatim
from mcp_farm.workers.mcp.pool import ServerPool

console = Console()
BUNDLED = "mcp_farm.scenarios.servers."
"""How a bundled fixture server's command names its module."""
THIRD_PARTY_SUITE = "thirdparty"


@dataclass
class Tally:
    group: str
    server: str
    descriptions: int = 0
    changed: int = 0
    unchanged: list[str] = field(default_factory=list)
    garbled: list[tuple[str, str]] = field(default_factory=list)


def servers() -> list[tuple[str, ServerDef]]:
    """(group, server) for every bundled fixture server (the catalogue's and the suites'
    own) and every server of the third-party suite, by name."""
    found: dict[str, tuple[str, ServerDef]] = {}
    for name, server in server_catalog().items():
        if name != DISTRACTOR_SERVER:
            found[name] = ("bundled", server)
    for path in sorted(Path("scenarios/suites").glob("*.yaml")):
        for name, server in servers_for(path.stem).items():
            bundled = any(BUNDLED in part for part in server.command or [])
            if name not in found and name != DISTRACTOR_SERVER and bundled:
                found[name] = ("bundled", server)
    for server in load_suite(THIRD_PARTY_SUITE).servers:
        found[server.name] = ("third-party", servers_for(THIRD_PARTY_SUITE)[server.name])
    return sorted(found.values(), key=lambda g: (g[0], g[1].name))


async def listed(chosen: list[tuple[str, ServerDef]]) -> dict[str, list[str]]:
    """Every description each server lists, by server name."""
    out: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        async with anyio.create_task_group() as keepers:
            pool = ServerPool(keepers, Path(tmp), 60.0)
            try:
                for _group, server in chosen:
                    live = await pool.acquire(server, [server.name])
                    shown = [t for t in live.tools if not is_control(t)]
                    out[server.name] = [t.description or "" for t in shown]
                    pool.release(live, healthy=False)
            finally:
                pool.close()
    return out


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def garbled(text: str, new: str) -> bool:
    """Whether a span to keep verbatim, or a number, came back fewer times than it was there."""
    spans = Counter(verbatim(text))
    if any(new.count(span) < n for span, n in spans.items()):
        return True
    numbers = Counter(re.findall(r"\d+", new))
    return any(numbers[k] < n for k, n in Counter(re.findall(r"\d+", text)).items())


def tally(group: str, server: str, descriptions: list[str]) -> Tally:
    t = Tally(group, server)
    for text in descriptions:
        if not text.strip():
            continue
        new = paraphrase(text)
        t.descriptions += 1
        if words(new) != words(text):
            t.changed += 1
        else:
            t.unchanged.append(text)
        if garbled(text, new):
            t.garbled.append((text, new))
    return t


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "–"


def report(tallies: list[Tally], show: bool) -> None:
    table = Table(title="paraphrased: descriptions changed")
    for head in ("group", "server", "descriptions", "changed", "share", "garbled"):
        table.add_column(head, justify="left" if head in ("group", "server") else "right")
    for t in tallies:
        table.add_row(
            t.group,
            t.server,
            str(t.descriptions),
            str(t.changed),
            _share(t.changed, t.descriptions),
            str(len(t.garbled)),
        )
    for group in ("bundled", "third-party"):
        part = [t for t in tallies if t.group == group]
        whole, changed = sum(t.descriptions for t in part), sum(t.changed for t in part)
        wrong = sum(len(t.garbled) for t in part)
        table.add_row(
            f"[bold]{group}[/bold]",
            "all",
            str(whole),
            str(changed),
            _share(changed, whole),
            str(wrong),
        )
    console.print(table)
    if not show:
        return
    for t in tallies:
        for text in t.unchanged:
            console.print(f"unchanged ({t.server}): {text!r}", highlight=False)
        for text, new in t.garbled:
            console.print(f"garbled ({t.server}): {text!r}\n  -> {new!r}", highlight=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", action="store_true", help="print unchanged and garbled ones")
    args = parser.parse_args()
    chosen = servers()
    found = anyio.run(listed, chosen)
    report([tally(group, s.name, found[s.name]) for group, s in chosen], args.show)


if __name__ == "__main__":
    main()
