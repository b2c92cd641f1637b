"""The distractor catalogue: mirrors of the bundled servers' tools, near-misses of them, and
tools of other domains, and how each answers (docs/robustness.md)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from mcp_farm.scenarios.servers._sdk import (
    FIXTURES,
    ToolError,
)
from mcp_farm.scenarios.servers.distractors._made import (
    NEAR_SUFFIXES,
    Distractor,
    mirror,
    near_miss,
)

CATALOG = FIXTURES / "distractors" / "catalog.json"
"""The bundled servers' tools as listed (written by scripts/distractor_catalog.py)."""

VERBS = ("create", "list", "get", "update", "delete", "search", "archive", "export", "share")
DOMAINS = {
    "invoice": ("billing", "in the billing ledger"),
    "ticket": ("helpdesk", "on the support desk"),
    "contact": ("crm", "among the customer records"),
    "deployment": ("deploy", "on the release pipeline"),
    "playlist": ("music", "in the music library"),
    "recipe": ("kitchen", "in the cookbook"),
    "shipment": ("logistics", "with the carrier"),
    "expense": ("expenses", "in the expense reports"),
    "meeting_room": ("rooms", "in the office booking system"),
    "vehicle": ("fleet", "in the fleet register"),
    "backup": ("backups", "in the backup vault"),
    "sensor": ("iot", "on the sensor network"),
    "coupon": ("promotions", "in the shop's promotions"),
    "flight": ("travel", "through the travel agency"),
    "lesson": ("school", "in the course planner"),
    "warehouse_bin": ("warehouse", "in the warehouse stock"),
}
"""Generated tools of other domains: every verb on every object, each object with the server
it seems to come from (what `namespaced` shows) and where it works."""

READING = ("list", "search", "find", "get", "read", "show", "fetch", "count", "describe", "check")


def _mirrors(listed: list[dict[str, Any]]) -> list[Distractor]:
    return [mirror(t["server"], t["name"], t["description"], t["input_schema"]) for t in listed]


def _near_misses(listed: list[dict[str, Any]], taken: set[str]) -> list[Distractor]:
    """Per bundled tool name (first listing), its near-miss, unless a bundled tool has that name."""
    out: list[Distractor] = []
    seen: set[str] = set()
    for i, t in enumerate(listed):
        if t["name"] in seen:
            continue
        seen.add(t["name"])
        suffix = NEAR_SUFFIXES[i % len(NEAR_SUFFIXES)]
        made = near_miss(t["server"], t["name"], t["description"], t["input_schema"], suffix)
        if made.shown not in taken:
            out.append(made)
    return out


def _schema(verb: str, thing: str) -> dict[str, Any]:
    key = f"{thing}_id"
    props: dict[str, Any]
    if verb == "create":
        props, required = {"name": {"type": "string"}, "notes": {"type": "string"}}, ["name"]
    elif verb == "list":
        props, required = {"limit": {"type": "integer", "default": 20}}, []
    elif verb == "search":
        props, required = {"query": {"type": "string"}}, ["query"]
    elif verb == "export":
        props = {"format": {"type": "string", "enum": ["csv", "json"]}}
        required = ["format"]
    elif verb == "update":
        props, required = {key: {"type": "string"}, "fields": {"type": "object"}}, [key]
    else:
        props, required = {key: {"type": "string"}}, [key]
    return {"type": "object", "properties": props, "required": required}


def _generated() -> list[Distractor]:
    out: list[Distractor] = []
    for thing, (server, place) in DOMAINS.items():
        for verb in VERBS:
            many = verb in ("list", "search", "export")
            shown = f"{verb}_{thing}s" if many else f"{verb}_{thing}"
            words = thing.replace("_", " ") + ("s" if many else "")
            article = "the" if verb == "list" else "an" if thing[0] in "aeiou" else "a"
            if many:
                article = "all" if verb == "export" else "the" if verb == "list" else ""
            said = " ".join(w for w in (verb.capitalize(), article, words, place) if w)
            out.append(
                Distractor(
                    name=f"gen.{verb}_{thing}",
                    shown=shown,
                    origin=server,
                    family="generated",
                    of="",
                    description=f"{said}.",
                    input_schema=_schema(verb, thing),
                )
            )
    return out


@cache
def distractors(catalog: Path = CATALOG) -> tuple[Distractor, ...]:
    """Every distractor the server lists, in a fixed order."""
    listed = json.loads(catalog.read_text(encoding="utf-8"))
    mirrors = _mirrors(listed)
    taken = {t["name"] for t in listed}
    return (*mirrors, *_near_misses(listed, taken), *_generated())


def answer(tool: Distractor, arguments: dict[str, Any]) -> str:
    """A plausible reply that answers nothing the scenario asks: reading tools find nothing,
    others report success."""
    missing = [k for k in tool.input_schema.get("required", []) if k not in arguments]
    if missing:
        raise ToolError(f"missing required argument: {', '.join(missing)}")
    verb = tool.shown.split("_")[0]
    if verb in READING:
        return "No matching items."
    return json.dumps({"status": "ok", "tool": tool.shown}, sort_keys=True)
