"""The cassette file: what one MCP server listed and answered, as YAML a person can read and edit.

A cassette holds the server's instructions, its tools (name, description, input schema), every
other tool list it announced (`tool_lists`) and, per distinct call (tool and arguments), the
answers it gave, in the order they were first recorded, each with what the server did around it
(`events`: the user it asked during the call, a tool-list change it announced after). Calls are matched by tool name and the canonical JSON of the arguments, so key order
and spacing in the file do not matter. docs/cassettes.md describes the format and the rules.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field

from mcp_farm.schema import (
    ElicitAction,
    Elicitation,
    IgnoreRules,
    SpecError,
    canonical_json,
    digest,
    mask_secrets,
    read_yaml,
    validate,
    with_lines,
)
from mcp_farm.schema.parse.strict import Strict

CASSETTE_FORMAT: Literal[3] = 3
"""The format version a cassette file states in its `cassette:` field: 2 added `tool_lists`
and an answer's `events`, 3 the `elicit` event; version 1 and 2 files load as they always did."""

MISS_META = "mcp-farm/cassette"
"""The `_meta` key of a result the cassette server gives for a call it never recorded; its
value is `not recorded`. The farm marks the trial as having left the cassette."""

MISS_PREFIX = "not in cassette:"
"""How the tool error for a call the cassette never recorded begins."""


class RecordedTool(Strict):
    """One tool as the server listed it."""

    name: str = Field(min_length=1)
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """The JSON schema of the tool's arguments, as the server listed it."""
    output_schema: dict[str, Any] | None = None
    """The schema of its structured results, where the server declared one."""
    annotations: dict[str, Any] | None = None
    """MCP's tool annotations (`read_only_hint`, …), where the server gave them."""


class ToolList(Strict):
    """A tool list the server announced mid-session (after `notifications/tools/list_changed`)."""

    tools: list[RecordedTool]


class ToolsChanged(Strict):
    """After the answer, the server changed its tool list and announced it."""

    tools_changed: int = Field(ge=0)
    """The list it offers from then on: 0 the cassette's `tools`, k its `tool_lists[k-1]`."""


class ElicitExchange(Strict):
    """One request the server sent the user during a call (MCP elicitation, form mode), and
    the user's answer."""

    message: str
    """What the server told the user."""
    requested_schema: dict[str, Any] = Field(default_factory=dict)
    """The form it asked for (the request's `requestedSchema`)."""
    action: ElicitAction
    """How the user answered: `accept`, `decline` or `cancel`."""
    content: dict[str, Any] | None = None
    """The values sent with `accept`."""

    def same_request(self, other: ElicitExchange) -> bool:
        return (self.message, self.requested_schema) == (other.message, other.requested_schema)

    def same_reply(self, action: str, content: dict[str, Any] | None) -> bool:
        """Whether the user answered as recorded (content compared as canonical JSON)."""
        return self.action == action and canonical_json(self.content) == canonical_json(content)


class Elicited(Strict):
    """During the call, before the answer, the server asked the user and got this reply."""

    elicit: ElicitExchange


Event = ToolsChanged | Elicited
"""What a server did around one answer, beyond answering: a mapping with one key naming its
kind. A new kind is another model with its own key, added here, so older files keep loading."""


class Answer(Strict):
    """One result the server gave to a call."""

    content: list[dict[str, Any]] = Field(default_factory=list)
    """The result's content blocks as MCP sends them: `{type: text, text: ...}`, images,
    resource links and embedded resources, with snake_case field names (`mime_type`)."""
    structured_content: dict[str, Any] | None = None
    """The structured result, for a tool with an output schema."""
    is_error: bool = False
    """Whether the server flagged the result as a tool error (served flagged again)."""
    latency_s: float | None = None
    """How long the server took when the answer was first recorded (for people; the cassette
    server answers at once)."""
    events: list[Event] = Field(default_factory=list)
    """What the server did around this answer, in order: the user it asked during the call
    (`elicit`), a tool-list change after it (`tools_changed`); replayed at the same points."""

    def asks(self) -> list[ElicitExchange]:
        """The requests the server sent the user before this answer, in order."""
        return [e.elicit for e in self.events if isinstance(e, Elicited)]

    def switch(self) -> int | None:
        """The tool list the server offers after this answer; None: the list stays."""
        changes = [e.tools_changed for e in self.events if isinstance(e, ToolsChanged)]
        return changes[-1] if changes else None

    def same_as(self, other: Answer, rules: IgnoreRules | None = None) -> bool:
        """Whether two answers say the same (their timing, and what `rules` ignore, aside)."""
        return self.fingerprint(rules) == other.fingerprint(rules)

    def fingerprint(self, rules: IgnoreRules | None = None) -> str:
        # Events join the digest only when there are some: a version 1 answer keeps its digest.
        events = [[e.model_dump() for e in self.events]] if self.events else []
        if not rules:
            return digest([self.content, self.structured_content, self.is_error, *events])
        content = [
            {**b, "text": rules.in_result(b["text"])}
            if isinstance(b.get("text"), str)
            else rules.applied(b)
            for b in self.content
        ]
        return digest([content, rules.applied(self.structured_content), self.is_error, *events])


class Exchange(Strict):
    """One distinct call (a tool and its arguments) and the answers recorded for it."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    answers: list[Answer] = Field(min_length=1)
    """The distinct answers, in the order first recorded. In one MCP session the n-th such
    call gets the n-th answer, and calls past the last get the last one again."""

    @property
    def key(self) -> str:
        return call_key(self.tool, self.arguments)

    def key_under(self, rules: IgnoreRules | None) -> str:
        """What the call is matched by, the values `rules` ignore aside (`match_key`)."""
        return match_key(self.tool, self.arguments, rules)


class Cassette(Strict):
    """Every recorded exchange of one server."""

    cassette: Literal[1, 2, 3] = CASSETTE_FORMAT
    """The file format's version (1 and 2 are read as ever; files are written as 3)."""
    server: str = Field(min_length=1)
    """The server's name in the definition it was recorded from."""
    recorded_from: str = ""
    """The command or URL of that definition, as written (`{env:VAR}` left unfilled)."""
    instructions: str = ""
    """What the server said about itself when a session opened (initialize's instructions)."""
    tools: list[RecordedTool]
    """What the server listed when a session opened."""
    tool_lists: list[ToolList] = Field(default_factory=list)
    """Every other list it announced during a session, which an answer's `tools_changed`
    event names."""
    calls: list[Exchange] = Field(default_factory=list)

    def by_key(self) -> dict[str, Exchange]:
        return {exchange.key: exchange for exchange in self.calls}

    def lists(self) -> list[list[RecordedTool]]:
        """Every tool list, as a `tools_changed` event numbers them (0: `tools`)."""
        return [self.tools, *(t.tools for t in self.tool_lists)]


def call_key(tool: str, arguments: dict[str, Any]) -> str:
    """What a call is matched by: its tool and the canonical JSON of its arguments."""
    return canonical_json([tool, arguments])


def match_key(tool: str, arguments: dict[str, Any], rules: IgnoreRules | None) -> str:
    """`call_key` of the arguments with what the server's ignore rules name replaced: two
    calls that differ only in an ignored value (a timestamp) are one call."""
    return call_key(tool, rules.applied(arguments) if rules else arguments)


def answers_by_key(cassette: Cassette, rules: IgnoreRules | None) -> dict[str, list[Answer]]:
    """Each call's answers by `match_key`; entries the rules make one call pool their answers,
    in the file's order, each distinct answer once."""
    found: dict[str, list[Answer]] = {}
    for exchange in cassette.calls:
        answers = found.setdefault(exchange.key_under(rules), [])
        for answer in exchange.answers:
            if not any(answer.same_as(a, rules) for a in answers):
                answers.append(answer)
    return found


def _problems(cassette: Cassette, source: str) -> list[SpecError]:
    """What validation per field cannot see: repeated tools or calls, calls of unlisted tools,
    content blocks without a type."""
    problems = []
    names: set[str] = set()
    for i, tool in enumerate(cassette.tools):
        if tool.name in names:
            problems.append(SpecError(source, f"tools[{i}].name", f"{tool.name!r} is listed twice"))
        names.add(tool.name)
    names |= {t.name for listed in cassette.tool_lists for t in listed.tools}
    lists = len(cassette.tool_lists) + 1
    first: dict[str, int] = {}
    for i, exchange in enumerate(cassette.calls):
        if exchange.tool not in names:
            problems.append(
                SpecError(source, f"calls[{i}].tool", f"{exchange.tool!r} is not in `tools`")
            )
        if exchange.key in first:
            problems.append(
                SpecError(
                    source,
                    f"calls[{i}]",
                    f"the same tool and arguments as calls[{first[exchange.key]}]: give one "
                    "entry several answers instead",
                )
            )
        first.setdefault(exchange.key, i)
        for j, answer in enumerate(exchange.answers):
            for k, block in enumerate(answer.content):
                if not isinstance(block.get("type"), str):
                    where = f"calls[{i}].answers[{j}].content[{k}]"
                    problems.append(SpecError(source, where, "a content block needs a `type`"))
            for k, event in enumerate(answer.events):
                if isinstance(event, ToolsChanged) and event.tools_changed >= lists:
                    where = f"calls[{i}].answers[{j}].events[{k}].tools_changed"
                    why = f"{event.tools_changed} names no list (`tools` and {lists - 1} `tool_lists`)"
                    problems.append(SpecError(source, where, why))
    return problems


def load_cassette(path: Path) -> Cassette:
    """Read and check a cassette file; SpecError naming the file, the field and its line."""
    source = str(path)
    try:
        cassette = validate(Cassette, read_yaml(path), source)
        problems = _problems(cassette, source)
        if problems:
            raise problems[0]
    except SpecError as exc:
        raise with_lines([exc])[0] from None
    return cassette


class _Dumper(yaml.SafeDumper):
    """YAML for people: text of several lines as a `|` block, keys in the models' order."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def cassette_text(cassette: Cassette) -> str:
    data = cassette.model_dump(mode="json", exclude_defaults=True)
    data.pop("cassette", None)  # a file read as version 1 is written as the current one
    data = {"cassette": CASSETTE_FORMAT, **data}  # stated even though it is the default
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def write_cassette(cassette: Cassette, path: Path) -> None:
    """Write the cassette to `path` at once: a reader sees the old file or the new, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A temporary file is private (0600); the cassette keeps its mode, or a new one is 0644.
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(cassette_text(cassette))
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def merged(old: Cassette | None, new: Cassette, rules: IgnoreRules | None = None) -> Cassette:
    """`old` with what `new` adds: its tool list and instructions (the latest listing wins),
    calls it lacks, and answers its calls lack (after those already there); calls and
    answers that differ only in what `rules` ignore are the same. The tool lists that events
    name are kept, each once, and the events renumbered to match."""
    if old is None:
        return new
    lists = Relisted(new.tools)
    calls: dict[str, Exchange] = {}
    for source in (old, new):
        for exchange in source.calls:
            exchange = lists.renumbered(exchange, source.lists())
            key = exchange.key_under(rules)
            known = calls.get(key)
            if known is None:
                calls[key] = exchange
                continue
            answers = list(known.answers)
            for answer in exchange.answers:
                if not any(answer.same_as(a, rules) for a in answers):
                    answers.append(answer)
            calls[key] = known.model_copy(update={"answers": answers})
    return new.model_copy(update={"calls": list(calls.values()), "tool_lists": lists.extra()})


class Relisted:
    """Tool lists gathered from several recordings, numbered as a cassette numbers them."""

    def __init__(self, first: list[RecordedTool]) -> None:
        self.lists = [first]

    def number(self, tools: list[RecordedTool]) -> int:
        """The list's number, added after the others when it is new."""
        for i, known in enumerate(self.lists):
            if known == tools:
                return i
        self.lists.append(tools)
        return len(self.lists) - 1

    def renumbered(self, exchange: Exchange, lists: list[list[RecordedTool]]) -> Exchange:
        """`exchange` with its events naming lists by this numbering (`lists`: its own)."""
        if not any(a.events for a in exchange.answers):
            return exchange
        answers = [
            a.model_copy(
                update={
                    "events": [
                        ToolsChanged(tools_changed=self.number(lists[e.tools_changed]))
                        if isinstance(e, ToolsChanged)
                        else e
                        for e in a.events
                    ]
                }
            )
            for a in exchange.answers
        ]
        return exchange.model_copy(update={"answers": answers})

    def extra(self) -> list[ToolList]:
        return [ToolList(tools=t) for t in self.lists[1:]]


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the cassette's lock file (`.<file>.lock` beside it): one writer at a time, across
    threads and processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.with_name(f".{path.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def add_to_cassette(path: Path, new: Cassette, rules: IgnoreRules | None = None) -> Cassette:
    """Merge `new` into the cassette at `path` (created when missing) under its lock; the
    cassette as written."""
    with locked(path):
        whole = merged(load_cassette(path) if path.exists() else None, new, rules)
        write_cassette(whole, path)
    return whole


def masked(value: Any) -> Any:
    """A JSON value with every secret the process knows masked (`mask_secrets`), keys too."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, dict):
        return {mask_secrets(str(k)): masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


def recorded_tool(tool: Any) -> RecordedTool:
    """A listed MCP tool as a cassette holds it, secrets masked."""
    annotations = tool.annotations
    return RecordedTool.model_validate(
        masked(
            {
                "name": tool.name,
                "description": tool.description or "",
                "input_schema": dict(tool.input_schema or {}),
                "output_schema": tool.output_schema,
                "annotations": annotations.model_dump(mode="json", exclude_none=True)
                if annotations
                else None,
            }
        )
    )


def recorded_answer(result: Any, latency_s: float, asked: Sequence[Elicitation] = ()) -> Answer:
    """An MCP call result as a cassette holds it, whole, secrets masked; `asked`: the
    elicitation exchanges the server had during the call, in order (its `elicit` events)."""
    events = [
        {"elicit": e.model_dump(include={"message", "requested_schema", "action", "content"})}
        for e in asked
    ]
    return Answer.model_validate(
        masked(
            {
                "content": [b.model_dump(mode="json", exclude_none=True) for b in result.content],
                "structured_content": result.structured_content,
                "is_error": bool(result.is_error),
                "latency_s": round(latency_s, 6),
                "events": events,
            }
        )
    )
