"""A trial's tool list at its level: distractors drawn in, descriptions rewritten, names changed.

Only what the model is shown changes: each ToolSpec keeps its server and real tool name, so a
call is sent, recorded and graded by the real name (docs/robustness.md).
"""

from __future__ import annotations

import random
from dataclasses import replace

from mcp_farm.schema import digest
from mcp_farm.schema.specs import DISTRACTOR_SERVER, ToolListLevel
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.connections import Connected
from mcp_farm.workers.mcp.describe import first_sentence, paraphrase, swapped
from mcp_farm.workers.model.toolspec import ToolSpec

NEAR_SHARE = 4
"""At most one distractor in this many is a near-miss of the scenario's own tools."""

def needs_distractors(level: ToolListLevel) -> bool:
    """Whether a level draws from the distractor server (a count, or twins to collide with)."""
    return level.tool_count > 0 or level.names == "colliding"


def shape_tools(conn: Connected, level: ToolListLevel, seed: int, scenario: str) -> None:
    """Replace `conn.tools` by the level's list. The draw depends only on the seed, the scenario
    and the level, so the same trial shows the same list in every run."""
    own = [t for t in conn.tools.values() if t.server != DISTRACTOR_SERVER]
    pool = [t for t in conn.tools.values() if t.server == DISTRACTOR_SERVER]
    rng = random.Random(digest([seed, scenario, level.label()]))
    drawn = _draw(own, pool, level, rng)
    listed = _interleave(own, drawn, rng)
    # Its own generator: which descriptions swap does not depend on how distractors are drawn.
    listed = _describe(
        listed, level, own, random.Random(digest([seed, scenario, level.label(), "descriptions"]))
    )
    conn.tools = _name(listed, level, conn.naming)
    # 250 fingerprints a trial would bloat what is stored; the catalogue is fixed anyway.
    conn.listed.pop(DISTRACTOR_SERVER, None)


def _draw(
    own: list[ToolSpec], pool: list[ToolSpec], level: ToolListLevel, rng: random.Random
) -> list[ToolSpec]:
    """Near-misses of the scenario's own tools (at most one in NEAR_SHARE), then the others;
    a mirror of an own tool only under `colliding`, where each own tool gets its twin."""
    mine = {t.tool for t in own}
    meta = {t.tool: t for t in pool}
    near = [t for t in pool if _family(t) == "near_miss" and _of(t) in mine]
    twins = [t for t in pool if _family(t) == "mirror" and _of(t) in mine]
    rest = [t for t in pool if t not in near and _shown(t) not in mine]
    rng.shuffle(near)
    rng.shuffle(rest)
    picked: list[ToolSpec] = []
    if level.names == "colliding":
        by_of: dict[str, ToolSpec] = {}
        for t in sorted(twins, key=lambda t: t.tool):
            by_of.setdefault(_of(t), t)
        picked += [by_of[t.tool] for t in own if t.tool in by_of]
    count = level.tool_count
    near_n = min(len(near), max(1, count // NEAR_SHARE)) if count else 0
    picked += near[:near_n]
    picked += rest[: max(0, count - near_n)]
    if len(rest) < count - near_n:
        raise InfraError(
            f"tool_count {count}: the distractor catalogue has only {len(rest) + near_n} "
            "tools to draw for this scenario"
        )
    return [meta[t.tool] for t in picked]


def _interleave(own: list[ToolSpec], drawn: list[ToolSpec], rng: random.Random) -> list[ToolSpec]:
    """Own tools keep their order; the distractors' positions are drawn."""
    total = len(own) + len(drawn)
    spots = set(rng.sample(range(total), len(drawn)))
    mine, theirs = iter(own), iter(drawn)
    return [next(theirs) if i in spots else next(mine) for i in range(total)]


def _describe(
    listed: list[ToolSpec], level: ToolListLevel, own: list[ToolSpec], rng: random.Random
) -> list[ToolSpec]:
    """The descriptions the level shows (workers/mcp/describe.py); `rng` draws the swap."""
    how = level.descriptions
    if how == "stripped":
        return [replace(t, description="") for t in listed]
    if how == "first_sentence":
        return [replace(t, description=first_sentence(t.description)) for t in listed]
    if how == "paraphrased":
        return [replace(t, description=paraphrase(t.description)) for t in listed]
    if how == "swapped":
        return swapped(listed, own, rng)
    return listed


def _name(listed: list[ToolSpec], level: ToolListLevel, naming: str) -> dict[str, ToolSpec]:
    """The list by shown name. `as_is` keeps each tool's own name (a distractor shows the bare
    name of the tool it mirrors); `namespaced` prefixes the server; `scrambled` gives opaque
    names; under `colliding` the first of two same-named tools keeps the name and a later one
    is shown as `server__name`, as clients that merge servers do."""
    out: dict[str, ToolSpec] = {}
    for t in listed:
        bare = _shown(t) if t.server == DISTRACTOR_SERVER else t.tool
        server = _origin(t) if t.server == DISTRACTOR_SERVER else t.server
        if level.names == "namespaced" or naming == "server_prefixed":
            name = f"{server}__{bare}"
        elif level.names == "scrambled":
            name = "tool_" + digest([t.server, t.tool])[:8]
        else:
            name = bare
        if name in out:
            name = f"{server}__{bare}"
        while name in out:  # a mirror of a server beside a tool of that same server
            name = f"{name}_2"
        out[name] = replace(t, shown_name=name)
    return out


def _family(t: ToolSpec) -> str:
    return t.meta.get("farm/family", "")


def _of(t: ToolSpec) -> str:
    return t.meta.get("farm/of", "")


def _shown(t: ToolSpec) -> str:
    return t.meta.get("farm/shown", t.tool)


def _origin(t: ToolSpec) -> str:
    return t.meta.get("farm/origin", t.server)
