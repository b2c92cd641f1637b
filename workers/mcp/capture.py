"""Capturing what a trial's MCP servers listed and answered into cassettes (docs/cassettes.md).

With a capture folder set (`farm run --capture DIR`, FARM_CAPTURE_DIR), every trial adds its
servers' exchanges to `DIR/<server>.yaml`: the tool list, each call's arguments and its whole
result (not the part the model was shown), and how long the call took. Each file is rewritten
whole under a lock, so trials of several processes on one machine add to it safely; a trial
that brings nothing new to this process's knowledge of a file leaves it alone. Secrets are
masked as everywhere (`mask_secrets`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.types import Tool

from mcp_farm.scenarios.cassette import (
    MISS_META,
    Answer,
    Cassette,
    Exchange,
    RecordedTool,
    Relisted,
    ToolsChanged,
    load_cassette,
    locked,
    masked,
    merged,
    recorded_answer,
    recorded_tool,
    write_cassette,
)
from mcp_farm.schema import (
    CONTROL_META,
    Elicitation,
    IgnoreRules,
    ServerDef,
    SpecError,
    mask_secrets,
)
from mcp_farm.workers.errors import InfraError

UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")

_written: dict[Path, set[str]] = {}
"""Per cassette file, the exchanges (tool, arguments, answer) this process knows it holds."""
_written_lock = threading.Lock()


def cassette_path(folder: Path, server: str) -> Path:
    """The cassette file of a server in a capture folder: its name, made safe for a file."""
    return folder / f"{UNSAFE.sub('_', server) or '_'}.yaml"


def left_cassette(result: Any) -> bool:
    """Whether a result is the cassette server's answer to a call it never recorded."""
    meta = getattr(result, "meta", None)
    return isinstance(meta, dict) and MISS_META in meta


def _definition(server: ServerDef) -> str:
    return " ".join(server.command) if server.command else server.url or ""


@dataclass
class _Tape:
    """One server's exchanges in one trial."""

    server: ServerDef
    tools: list[RecordedTool]
    instructions: str
    calls: dict[str, Exchange] = field(default_factory=dict)
    lists: Relisted | None = None
    """Every tool list the server announced in the trial (None until it announced one)."""
    last: tuple[str, int, bool] | None = None
    """The latest call's key, its answer's place, and whether this call added that answer: a
    list announced after it changed after it."""

    def cassette(self) -> Cassette:
        return Cassette(
            server=self.server.name,
            recorded_from=mask_secrets(_definition(self.server)),
            instructions=mask_secrets(self.instructions),
            tools=self.tools,
            tool_lists=self.lists.extra() if self.lists else [],
            calls=list(self.calls.values()),
        )

    def add(self, exchange: Exchange) -> None:
        """One call's exchange, merged with the same call's earlier answers."""
        rules = self.server.ignore
        key = exchange.key_under(rules)
        known = self.calls.get(key)
        merged = exchange if known is None else merged_exchange(known, exchange.answers[0], rules)
        self.calls[key] = merged
        answer = exchange.answers[0]
        i = next(i for i, a in enumerate(merged.answers) if answer.same_as(a, rules))
        self.last = (key, i, known is None or len(merged.answers) > len(known.answers))

    def relisted(self, tools: list[RecordedTool]) -> None:
        """A list the server announced: a change after the latest call's answer, which that
        answer carries as an event. The same answer without the change (recorded when the
        call changed nothing) stays as it was beside it."""
        if self.last is None:  # no call of this trial caused it (a reset before the trial)
            return
        if self.lists is None:
            self.lists = Relisted(self.tools)
        key, i, added = self.last
        exchange = self.calls[key]
        answer = exchange.answers[i]
        event = ToolsChanged(tools_changed=self.lists.number(tools))
        changed = answer.model_copy(update={"events": [*answer.events, event]})
        answers = [a for j, a in enumerate(exchange.answers) if j != i or not added]
        rules = self.server.ignore
        found = next((j for j, a in enumerate(answers) if changed.same_as(a, rules)), None)
        if found is None:
            answers.append(changed)
        self.calls[key] = exchange.model_copy(update={"answers": answers})
        self.last = (key, len(answers) - 1 if found is None else found, found is None)


def is_control(tool: Tool) -> bool:
    """Whether a listed tool is for the farm only (its `_meta` holds CONTROL_META: true)."""
    return bool(tool.meta and tool.meta.get(CONTROL_META) is True)


@dataclass
class Capture:
    """The exchanges of one trial, written into the capture folder's cassettes by `save`."""

    folder: Path
    tapes: dict[str, _Tape] = field(default_factory=dict)
    seen: int = 0
    """How many of the trial's elicitation exchanges came before the latest captured call:
    those after it came during the next one (calls run one at a time)."""
    control: dict[str, set[str]] = field(default_factory=dict)
    """Per server, its control tools: never recorded, listed or called (a probe's snapshot, a
    restore, a hidden trigger), since a cassette must not hold a call of a tool it does not
    list."""

    def listed(self, server: ServerDef, tools: list[Tool], instructions: str) -> None:
        """A server the trial attached, with what it listed. A `replay:` server is itself a
        recording, and is not captured again."""
        if server.replay is not None:
            return
        # A control tool is the farm's own channel (docs/state.md): a cassette that listed it
        # would offer it to a model as an ordinary tool.
        recorded = [recorded_tool(t) for t in tools if not is_control(t)]
        self.control[server.name] = {t.name for t in tools if is_control(t)}
        self.tapes[server.name] = _Tape(server, recorded, instructions)

    def started(self, server: str, tools: list[Tool]) -> None:
        """What a server lists once its reset and the scenario's setup ran: the list its
        cassette starts from, as the trial's model does. A change before it is no call's."""
        tape = self.tapes.get(server)
        if tape is None:
            return
        self.control[server] = {t.name for t in tools if is_control(t)}
        tape.tools = [recorded_tool(t) for t in tools if not is_control(t)]
        tape.lists, tape.last = None, None

    def called(
        self,
        server: str,
        tool: str,
        arguments: dict[str, Any],
        result: Any,
        latency_s: float,
        elicited: Sequence[Elicitation] = (),
    ) -> None:
        """One call and its whole result (setup, reset and trigger calls included);
        `elicited`: the trial's elicitation exchanges so far, of which those since the previous
        call came during this one and are recorded as its answer's `elicit` events (form mode:
        a URL-mode request is declined unseen by any user, and not replayed)."""
        during = [e for e in elicited[self.seen :] if e.server == server and e.mode == "form"]
        self.seen = len(elicited)
        tape = self.tapes.get(server)
        if tape is None or tool in self.control.get(server, set()):
            return
        answer = recorded_answer(result, latency_s, during)
        tape.add(Exchange(tool=tool, arguments=masked(arguments), answers=[answer]))

    def relisted(self, server: str, tools: list[Tool]) -> None:
        """A tool list the server announced mid-trial (notifications/tools/list_changed),
        recorded as a change after its latest call, where a cassette replays it."""
        tape = self.tapes.get(server)
        if tape is not None:
            self.control.setdefault(server, set()).update(t.name for t in tools if is_control(t))
            tape.relisted([recorded_tool(t) for t in tools if not is_control(t)])

    def save(self) -> None:
        """Add this trial's exchanges to the cassettes; InfraError naming the file when one
        cannot be read or written."""
        for tape in self.tapes.values():
            path = cassette_path(self.folder, tape.server.name)
            new = tape.cassette()
            if _known(path, new):
                continue
            try:
                with locked(path):
                    old = load_cassette(path) if path.exists() else None
                    write_cassette(merged(old, new, tape.server.ignore), path)
            except (OSError, SpecError) as exc:
                raise InfraError(f"cannot add to the cassette {path}: {exc}") from None
            _remember(path, new)


def merged_exchange(known: Exchange, answer: Answer, rules: IgnoreRules | None = None) -> Exchange:
    """`known` with `answer` added, unless it already holds the same answer (what the server's
    ignore rules name aside)."""
    if any(answer.same_as(a, rules) for a in known.answers):
        return known
    return known.model_copy(update={"answers": [*known.answers, answer]})


def _fingerprints(cassette: Cassette) -> set[str]:
    return {
        f"{exchange.key}\n{answer.fingerprint()}"
        for exchange in cassette.calls
        for answer in exchange.answers
    }


def _known(path: Path, cassette: Cassette) -> bool:
    """Whether this process wrote every exchange of `cassette` into `path` already (the file
    is then left alone: rewriting a large cassette for every trial would cost more than the
    trial)."""
    with _written_lock:
        return path.exists() and _fingerprints(cassette) <= _written.get(path, set())


def _remember(path: Path, cassette: Cassette) -> None:
    with _written_lock:
        _written.setdefault(path, set()).update(_fingerprints(cassette))
