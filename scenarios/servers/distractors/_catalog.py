"""The distractor catalogue: mirrors of the bundled servers' tools, near-misses of them, and
tools of other domains, and how each answers (docs/robustness.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from mcp_farm.scenarios.servers._sdk import (
    FIXTURES,
    ToolError,
)

CATALOG = FIXTURES / "distractors" / "catalog.json"
"""The bundled servers' tools as listed (written by scripts/distractor_catalog.py)."""

NEAR_SUFFIXES = ("archive", "drafts", "history", "shared", "metadata")
"""What a near-miss works on instead: the same verb, an overlapping object."""

VERBS = ("create", "list", "get", "update", "delete", "search", "archive", "export", "share")
OBJECTS = (
    "invoice",
    "ticket",
    "contact",
    "deployment",
    "playlist",
    "recipe",
    "shipment",
    "expense",
    "meeting_room",
    "vehicle",
    "backup",
    "sensor",
    "coupon",
    "flight",
    "lesson",
    "warehouse_bin",
)
"""Generated tools of other domains: every verb on every object."""

READING = ("list", "search", "find", "get", "read", "show", "fetch", "count", "describe", "check")


@dataclass(frozen=True)
class Distractor:
    """One tool the server lists: its real (unique) name and what a trial may show of it."""

    name: str
    """The name the server lists and is called by, e.g. `mirror.search.search_documents`."""
    shown: str
    """The bare name a client would show (`search_documents`)."""
    origin: str
    """The server it pretends to belong to (`search`; `other` for generated tools)."""
    family: str
    """`mirror`, `near_miss` or `generated`."""
    of: str
    """For a mirror or near-miss, the bundled tool it copies; empty for a generated one."""
    description: str
    input_schema: dict[str, Any]


def _first_sentence(text: str) -> str:
    head = text.strip().split("\n")[0]
    cut = head.find(". ")
    return head if cut < 0 else head[: cut + 1]


def _mirrors(listed: list[dict[str, Any]]) -> list[Distractor]:
    return [
        Distractor(
            name=f"mirror.{t['server']}.{t['name']}",
            shown=t["name"],
            origin=t["server"],
            family="mirror",
            of=t["name"],
            description=t["description"],
            input_schema=t["input_schema"],
        )
        for t in listed
    ]


def _near_misses(listed: list[dict[str, Any]], taken: set[str]) -> list[Distractor]:
    """Per bundled tool name (first listing), one tool with its verb and parameters but
    another object, e.g. `read_file` → `read_file_history`."""
    out: list[Distractor] = []
    seen: set[str] = set()
    for i, t in enumerate(listed):
        if t["name"] in seen:
            continue
        seen.add(t["name"])
        suffix = NEAR_SUFFIXES[i % len(NEAR_SUFFIXES)]
        shown = f"{t['name']}_{suffix}"
        if shown in taken:
            continue
        said = _first_sentence(t["description"]) or f"Runs {t['name']}."
        out.append(
            Distractor(
                name=f"near.{t['server']}.{shown}",
                shown=shown,
                origin=t["server"],
                family="near_miss",
                of=t["name"],
                description=f"{said} Works on the {suffix.replace('_', ' ')} only.",
                input_schema=t["input_schema"],
            )
        )
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
    return [
        Distractor(
            name=f"gen.{verb}_{thing}",
            shown=f"{verb}_{thing}"
            if verb not in ("list", "search", "export")
            else f"{verb}_{thing}s",
            origin="other",
            family="generated",
            of="",
            description=f"{verb.capitalize()} {'a' if verb != 'list' else 'the'} "
            f"{thing.replace('_', ' ')}{'s' if verb in ('list', 'search', 'export') else ''} "
            "in the company's records.",
            input_schema=_schema(verb, thing),
        )
        for thing in OBJECTS
        for verb in VERBS
    ]


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
