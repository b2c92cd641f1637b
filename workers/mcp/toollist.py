"""A trial's tool list at its level: distractors drawn in, descriptions rewritten, names changed.

Only what the model is shown changes: each ToolSpec keeps its server and real tool name, so a
call is sent, recorded and graded by the real name (docs/robustness.md).
"""

from __future__ import annotations

import random
from dataclasses import asdict, replace

from mcp_farm.scenarios.servers.distractors import (
    ADD_TOOL,
    NEAR_SUFFIXES,
    Distractor,
    mirror,
    near_miss,
)
from mcp_farm.schema import ListPosition, digest
from mcp_farm.schema.specs import DISTRACTOR_SERVER, ToolListLevel
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.connections import Connected, result_text
from mcp_farm.workers.mcp.describe import first_sentence, paraphrase, swapped
from mcp_farm.workers.model.toolspec import ToolSpec

NEAR_SHARE = 4
"""At most one distractor in this many is a near-miss of the scenario's own tools."""


def needs_distractors(level: ToolListLevel) -> bool:
    """Whether a level draws from the distractor server. Twins count toward the level's count,
    so `colliding` at 0 distractors collides nothing."""
    return level.tool_count > 0


async def shape_tools(
    conn: Connected, level: ToolListLevel, seed: int, scenario: str, expected: list[str]
) -> list[ListPosition]:
    """Replace `conn.tools` by the level's list; where each of the `expected` tools sits in it.
    The draw depends only on the seed, the scenario and the level, so the same trial shows the
    same list in every run."""
    own = [t for t in conn.tools.values() if t.server != DISTRACTOR_SERVER]
    pool = [t for t in conn.tools.values() if t.server == DISTRACTOR_SERVER]
    rng = random.Random(digest([seed, scenario, level.label()]))
    drawn, made = _draw(own, pool, level, expected, rng)
    served = {t.tool for t in pool}
    await _serve(conn, [d for d in made if d.name not in served])
    listed = _place(own, drawn, rng)
    # Its own generator: which descriptions swap does not depend on how distractors are drawn.
    listed = _describe(
        listed, level, own, random.Random(digest([seed, scenario, level.label(), "descriptions"]))
    )
    conn.tools = _name(listed, level, conn.naming)
    # 250 fingerprints a trial would bloat what is stored; the catalogue is fixed anyway.
    conn.listed.pop(DISTRACTOR_SERVER, None)
    return positions(list(conn.tools.values()), expected)


def _draw(
    own: list[ToolSpec],
    pool: list[ToolSpec],
    level: ToolListLevel,
    expected: list[str],
    rng: random.Random,
) -> tuple[list[ToolSpec], list[Distractor]]:
    """The level's `tool_count` distractors, and those of them made here from the attached
    servers' own listings (near-misses and twins, which the distractor server must be told to
    serve). Under `colliding` the twins come first (the expected tools' before the others'),
    then near-misses of the own tools (at most one in NEAR_SHARE), then the rest of the
    catalogue: mirrors and near-misses of tools the trial does not have, and other domains'."""
    count = level.tool_count
    if not count:
        return [], []
    mine = {t.tool for t in own}
    start = rng.randrange(len(NEAR_SUFFIXES))
    turns = [NEAR_SUFFIXES[(start + k) % len(NEAR_SUFFIXES)] for k in range(len(own))]
    near = list({d.shown: d for d in map(_near, own, turns)}.values())
    near = [d for d in near if d.shown not in mine]
    taken = mine | {d.shown for d in near}
    rest = [t for t in pool if _of(t) not in mine and _shown(t) not in taken]
    rng.shuffle(near)
    rng.shuffle(rest)
    twins: list[Distractor] = []
    if level.names == "colliding":
        order = list(own)
        rng.shuffle(order)
        order.sort(key=lambda t: t.tool not in expected)  # stable: expected first, drawn order
        twins = [mirror(t.server, t.tool, t.description, t.input_schema) for t in order[:count]]
    near = near[: min(len(near), max(1, count // NEAR_SHARE), count - len(twins))]
    wanted = count - len(twins) - len(near)
    if len(rest) < wanted:
        raise InfraError(
            f"tool_count {count}: the distractor catalogue has only "
            f"{len(rest) + len(near) + len(twins)} tools to draw for this scenario"
        )
    made = twins + near
    return [_spec(d) for d in made] + rest[:wanted], made


def _near(t: ToolSpec, suffix: str) -> Distractor:
    return near_miss(t.server, t.tool, t.description, t.input_schema, suffix)


def _spec(d: Distractor) -> ToolSpec:
    """A distractor made here, as the distractor server serves it once told (`_serve`)."""
    meta = {"shown": d.shown, "origin": d.origin, "family": d.family, "of": d.of}
    return ToolSpec(
        shown_name=d.shown,
        server=DISTRACTOR_SERVER,
        tool=d.name,
        description=d.description,
        input_schema=d.input_schema,
        meta={f"farm/{key}": value for key, value in meta.items()},
    )


async def _serve(conn: Connected, made: list[Distractor]) -> None:
    """Tell the distractor server to serve what this trial made of its servers' tools."""
    if not made:
        return
    result = await conn.call(DISTRACTOR_SERVER, ADD_TOOL, {"tools": [asdict(d) for d in made]})
    if result.is_error:
        refused = result_text(result)
        raise InfraError(f"the distractor server refused this trial's distractors: {refused}")


def _place(own: list[ToolSpec], drawn: list[ToolSpec], rng: random.Random) -> list[ToolSpec]:
    """Every position drawn, own tools' and distractors' alike, so neither where a tool sits
    nor which of two twins comes first tells a distractor from a real tool. Without
    distractors the list is the servers' own."""
    if not drawn:
        return own
    listed = own + drawn
    rng.shuffle(listed)
    return listed


def positions(listed: list[ToolSpec], expected: list[str]) -> list[ListPosition]:
    """Where each expected tool (its first own listing) sits in the list shown."""
    out: list[ListPosition] = []
    for name in dict.fromkeys(expected):
        found = next(
            (i for i, t in enumerate(listed) if t.tool == name and t.server != DISTRACTOR_SERVER),
            None,
        )
        server = listed[found].server if found is not None else None
        out.append(ListPosition(tool=name, server=server, index=found, listed=len(listed)))
    return out


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
