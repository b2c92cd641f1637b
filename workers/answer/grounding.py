"""Citation grounding: find `path:line` references in an answer and check each against a
checkout of the pinned commit.

`grounded`: the file exists, the lines are in range and a symbol named beside the citation is
defined there (the cited lines touch its definition, give or take `tolerance` lines) or used
there (its name appears within `tolerance` lines); `unresolved`: no such path in the commit;
`hallucinated`: the file exists but a line is past its end or what was written as a line
cannot be read as one (`99999a`), or the symbol is too far away.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from mcp_farm.schema import (
    GROUNDINGS,
    Citation,
    Grounding,
)
from mcp_farm.workers.answer.lines import (
    LINE_LIKE,
    LINK,
    NEAR,
    SCRIPT_DIGITS,
    LineCell,
    Lines,
    after,
    before,
    beside,
    in_cells,
    table_lines,
)
from mcp_farm.workers.answer.links import URL, linked, repo_path
from mcp_farm.workers.answer.sentences import SENTENCE_END, Written, claimed

EXTENSIONS = "py|pyi|md|rst|txt|toml|cfg|ini|json|ya?ml|js|ts|c|h|rs|go|java|sh"
# A path: relative, absolute, or with a drive letter; `/` or `\` between its parts; a
# footnote's superscript may follow it (`conn.py²`). Not followed by `(`: `response.json()` is a call, not a file; but a compiler's `path(127):` is a
# path and its line.
CITE = re.compile(
    r"(?<![\w/\\.-])(?P<path>(?:[A-Za-z]:[/\\]|\.{1,2}[/\\]|/)?(?:[\w.-]+[/\\])*"
    rf"[\w.-]*\w\.(?:{EXTENSIONS}))"
    rf"(?!(?![{SCRIPT_DIGITS}])[\w/]|\((?!\d+(?:,\d+)?\):))"
)
DRIVE = re.compile(r"^[A-Za-z]:/")
SYMBOL = re.compile(r"`(?P<name>[A-Za-z_][\w.]*)(?:\([^`]*\))?`")
# A clause ends at a sentence stop, a blank line, or a new list item, table row or heading; a
# single newline does not end it, since prose is often hard-wrapped.
CLAUSE_END = re.compile(r"[.;!?]\s|\n\s*(?:\n|[-*+>#|]|\d+[.)]\s)")
WINDOW = 100
AFTER = 30


@dataclass(frozen=True)
class CitationRef:
    """A reference as the answer wrote it (not yet checked)."""

    text: str
    path: str
    line_start: int | None = None
    line_end: int | None = None
    symbol: str | None = None
    bad_line: str | None = None
    """What was written as a line but cannot be read as one: too many digits, digits glued to
    a letter (`99999a`), `_` or a decimal part, a signed number, one behind other marks
    (`path:[12]`), or one in words (`line XII`); see `lines`."""
    also: tuple[tuple[int, int], ...] = ()
    """Further lines its sentence gives it (`a.py:2 calls it; the loop is at line 40`): each
    must be in the file too (see `sentences`)."""
    ref: str | None = None
    """The branch or tag of the repository link it was read from (`…/blob/main/path`): the
    line is still checked at the pinned commit, and the verdict's detail names the ref."""


def _names(text: str, offset: int, taken: set[int]) -> list[tuple[int, str]]:
    """Backticked names in `text` (which starts at `offset` in the prose) that are no file
    name and that no earlier citation took as the name written after it."""
    return [
        (offset + m.start(), m.group("name"))
        for m in SYMBOL.finditer(text)
        if not CITE.search(m.group(0))
        and not LINE_LIKE.fullmatch(m.group("name"))  # `L12` is a line, not a name
        and offset + m.start() not in taken
    ]


def _symbol_near(prose: str, start: int, end: int, taken: set[int]) -> str | None:
    """A backticked name in the same clause: the nearest one before the citation, else the
    first one after it. A name taken after an earlier citation is not reused before this one,
    so in "a.py:1 — `f`, a.py:9 — `g`" the second citation gets `g`."""
    low = max(0, start - WINDOW)
    cut = [m.end() for m in CLAUSE_END.finditer(prose, low, start)]
    low = cut[-1] if cut else low
    names = _names(prose[low:start], low, taken)
    if names:
        return names[-1][1]
    # After the citation only a name right beside it counts ("path:12 — `send`"): a name
    # further on belongs to what the sentence says next.
    after = prose[end : end + AFTER]
    stops = [
        m.start()
        for m in (CLAUSE_END.search(after), CITE.search(after), re.search(r"[,)]", after))
        if m
    ]
    after = after[: min(stops)] if stops else after
    names = _names(after, end, taken)
    if not names:
        return None
    taken.add(names[0][0])
    return names[0][1]


def _written(
    prose: str, path: re.Match[str], rows: dict[tuple[int, int], tuple[LineCell, ...]], low: int
) -> Lines:
    """The lines written with a path: after it, else in its table row's line column, else
    before it (`line 12 of path`), else a line-like token beside it (read when it is a line
    word and a plain number, else unreadable: `bad`). `low`: where the previous citation's
    text ends."""
    own, cell = next(((k, c) for k, c in rows.items() if k[0] <= path.start() < k[1]), (None, None))
    found = after(prose, path.end())
    # In a table with a line column, a line read past the path's own cell (`| path | L12 |`)
    # is the line column's to give.
    if own is not None and found.end > own[1]:
        found = Lines(path.end())
    if found.read:
        return found
    if cell is not None:
        found = in_cells(prose, cell)
        if found.read:
            return Lines(path.end(), found.start, found.last, found.bad)
    read = before(prose, path.start())
    if read is not None:
        return read
    return _beside(prose, path, low) or found


def _beside(prose: str, path: re.Match[str], low: int) -> Lines | None:
    """A line-like token right beside the path, in its sentence, in a form the others do not
    read (`path: `f` (line 12)`, `path (#12)`). The sentence ends at a stop or a new item, and
    at another path (or the line written before it: `path and line 3 of other.py` is
    other.py's line)."""
    start, end = path.span()
    cut = [m.end() for m in SENTENCE_END.finditer(prose, max(low, start - NEAR), start)]
    low = max([low, *cut])
    stops = [m.start() for m in (SENTENCE_END.search(prose, end), CITE.search(prose, end)) if m]
    nxt = CITE.search(prose, end)
    if nxt is not None:
        written = before(prose, nxt.start())
        stops += [written.end] if written is not None else []
    return beside(prose, low, (start, end), min(stops, default=len(prose)))


@dataclass(frozen=True)
class _Found:
    path: str
    span: tuple[int, int]
    lines: Lines
    ref: str | None = None


def _found(prose: str) -> list[_Found]:
    """Every path in the prose with the lines written with it, in order: paths in the text and
    paths inside repository links (`…/blob/<commit>/path#L12`)."""
    rows = dict(table_lines(prose))
    marks = sorted([*CITE.finditer(prose), *URL.finditer(prose)], key=lambda m: m.start())
    out: list[_Found] = []
    consumed = 0
    for m in marks:
        if m.start() < consumed:
            continue  # inside what an earlier citation wrote (a link's target)
        if m.re is URL:
            link = linked(prose, m, CITE)
            if link is not None:
                out.append(_Found(link.path, m.span(), link.lines, link.ref))
                consumed = link.lines.end
            continue
        path = m.group("path").replace("\\", "/")
        while path.startswith("./"):
            path = path[2:]
        target = LINK.match(prose, m.end())
        fuller = repo_path(target.group("url"), CITE) if target is not None else None
        ref = None
        if fuller is not None and (fuller[0] == path or fuller[0].endswith(f"/{path}")):
            path, ref = fuller  # `[conn.py](…/blob/<sha>/pkg/conn.py)` cites pkg/conn.py
        lines = _written(prose, m, rows, consumed)
        consumed = max(lines.end, m.end())
        out.append(_Found(path, m.span(), lines, ref))
    return out


def _merged(lines: Lines, more: list[Lines]) -> tuple[Lines, tuple[tuple[int, int], ...]]:
    """A citation's own lines with those its sentence gives it: the first becomes its line when
    it wrote none; an unreadable one makes the whole citation unreadable."""
    also: list[tuple[int, int]] = []
    for extra in more:
        if not lines.read:
            lines = Lines(lines.end, extra.start, extra.last, extra.bad)
        elif extra.bad is not None and lines.bad is None:
            lines = Lines(lines.end, lines.start, lines.last, extra.bad)
        elif extra.start is not None and extra.last is not None:
            also.append((extra.start, extra.last))
    return lines, tuple(also)


def extract(prose: str) -> list[CitationRef]:
    """Every distinct `path` with the line or lines written with it (`path:12`, `path:L12`,
    `path#L12-L20`, `path (line 12)`, `File "path", line 12`, `line 12 of path`, `path(12):`,
    a table's line column, a repository link, … see `lines` and `links`) or given to it by its
    sentence (see `sentences`), and the symbol named beside it. A citation repeated word for
    word (same path, lines and symbol) counts once. `\\` in a path reads as `/`."""
    found = _found(prose)
    spans = [
        Written(f.span, (min(f.lines.end, f.span[0]), max(f.lines.end, f.span[1]))) for f in found
    ]
    more = claimed(prose, spans)
    refs: dict[tuple[object, ...], CitationRef] = {}
    taken: set[int] = set()
    for k, (f, written) in enumerate(zip(found, spans, strict=True)):
        lines, also = _merged(f.lines, more.get(k, []))
        symbol = _symbol_near(prose, f.span[0], written.text[1], taken)
        key = (f.path, lines.start, lines.last, symbol, lines.bad, also, f.ref)
        text = prose[written.text[0] : written.text[1]]
        refs.setdefault(
            key,
            CitationRef(text, f.path, lines.start, lines.last, symbol, lines.bad, also, f.ref),
        )
    return list(refs.values())


@dataclass(frozen=True)
class _File:
    lines: list[str]
    definitions: dict[str, list[tuple[int, int]]]


def _definitions(source: str) -> dict[str, list[tuple[int, int]]]:
    """Name → the line spans of its definitions: functions, classes, methods (also as
    `Class.method`) and module-level assignments."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    names: dict[str, list[tuple[int, int]]] = {}

    def add(name: str, node: ast.stmt) -> None:
        names.setdefault(name, []).append((node.lineno, node.end_lineno or node.lineno))

    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    add(target.id, node)
    for found in ast.walk(tree):
        if isinstance(found, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            add(found.name, found)
        if isinstance(found, ast.ClassDef):
            for item in found.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    add(f"{found.name}.{item.name}", item)
    return names


def _load(path: Path) -> _File:
    text = path.read_text(encoding="utf-8", errors="replace")
    definitions = _definitions(text) if path.suffix in (".py", ".pyi") else {}
    return _File(lines=text.splitlines(), definitions=definitions)


def _inside(repo: Path, relative: str) -> Path | None:
    """The file in the checkout, or None when the path is absolute, escapes it, or is absent."""
    if relative.startswith("/") or DRIVE.match(relative) or ".." in Path(relative).parts:
        return None
    target = (repo / relative).resolve()
    if not target.is_relative_to(repo.resolve()) or not target.is_file():
        return None
    return target


def _gap(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Lines between two spans (0 when they overlap)."""
    return max(0, a[0] - b[1], b[0] - a[1])


def _candidates(symbol: str) -> list[str]:
    parts = [p for p in symbol.split(".") if p not in ("self", "cls")]
    names = [".".join(parts), ".".join(parts[-2:]), parts[-1]] if parts else []
    return list(dict.fromkeys(n for n in names if n))


def _owner(symbol: str, file: _File) -> tuple[str, str] | None:
    """(Class, method) when the symbol is `Class.method` and the file defines `Class`: then the
    class must be the one at the cited lines, not just any definition or use of `method`."""
    parts = [p for p in symbol.split(".") if p not in ("self", "cls")]
    if len(parts) < 2 or parts[-2] not in file.definitions:
        return None
    return parts[-2], parts[-1]


def _check_method(
    owner: tuple[str, str], cited: tuple[int, int], file: _File, tolerance: int
) -> tuple[Grounding, str]:
    """`Class.method`: its own definition near the cited lines, or a use of `method` near them
    inside the class's body (or beside the class's name)."""
    cls, method = owner
    qualified = f"{cls}.{method}"
    found = file.definitions.get(qualified, [])
    if found:
        near = min(found, key=lambda span: _gap(span, cited))
        if _gap(near, cited) <= tolerance:
            return "grounded", f"`{qualified}` defined at line {near[0]}"
    inside = any(span[0] <= cited[0] and cited[1] <= span[1] for span in file.definitions[cls])
    low, high = max(1, cited[0] - tolerance), min(len(file.lines), cited[1] + tolerance)
    window = [file.lines[i - 1] for i in range(low, high + 1)]
    used = any(re.search(rf"(?<!\w){re.escape(method)}(?!\w)", line) for line in window)
    named = any(re.search(rf"(?<!\w){re.escape(cls)}(?!\w)", line) for line in window)
    if used and (inside or named):
        return "grounded", f"`{method}` used within {tolerance} lines, in or beside `{cls}`"
    if found:
        return "hallucinated", f"`{qualified}` defined at line {near[0]}, not at the citation"
    return "hallucinated", f"`{cls}` has no `{method}` near the citation"


def _check_symbol(ref: CitationRef, file: _File, tolerance: int) -> tuple[Grounding, str]:
    assert ref.symbol is not None
    cited = (ref.line_start or 1, ref.line_end or ref.line_start or len(file.lines))
    owner = _owner(ref.symbol, file)
    if owner is not None:
        return _check_method(owner, cited, file, tolerance)
    names = _candidates(ref.symbol)
    spans = next(((n, file.definitions[n]) for n in names if n in file.definitions), None)
    if spans is not None:
        name, found = spans
        near = min(found, key=lambda span: _gap(span, cited))
        if _gap(near, cited) <= tolerance:
            return "grounded", f"`{name}` defined at line {near[0]}"
    # Not its definition: a use of the name at the cited lines grounds it too (a call site).
    word = re.compile(rf"(?<!\w){re.escape(names[-1])}(?!\w)")
    low, high = max(1, cited[0] - tolerance), min(len(file.lines), cited[1] + tolerance)
    if any(word.search(file.lines[i - 1]) for i in range(low, high + 1)):
        return "grounded", f"`{names[-1]}` used within {tolerance} lines"
    if spans is not None:
        away = _gap(near, cited)
        return "hallucinated", f"`{name}` defined at line {near[0]}, {away} lines away"
    return "hallucinated", f"`{ref.symbol}` is not within {tolerance} lines of the citation"


def _at_ref(ref: CitationRef, repo: Path) -> CitationRef:
    """A citation read from a link at a branch: when its path is not in the checkout, the
    branch may have had a `/` in it (`…/blob/feature/x/pkg/a.py`), so leading parts move from
    the path into the ref while the rest names a file of the checkout."""
    if ref.ref is None or _inside(repo, ref.path) is not None:
        return ref
    parts = ref.path.split("/")
    for k in range(1, len(parts)):
        if _inside(repo, "/".join(parts[k:])) is not None:
            return replace(ref, path="/".join(parts[k:]), ref="/".join([ref.ref, *parts[:k]]))
    return ref


def _check(ref: CitationRef, repo: Path, files: dict[Path, _File], tolerance: int) -> Citation:
    ref = _at_ref(ref, repo)
    named = f" (linked at `{ref.ref}`, checked at the pinned commit)" if ref.ref else ""

    def cited(status: Grounding, detail: str) -> Citation:
        return Citation(
            text=ref.text,
            path=ref.path,
            line_start=ref.line_start,
            line_end=ref.line_end,
            symbol=ref.symbol,
            status=status,
            detail=detail + named,
        )

    target = _inside(repo, ref.path)
    if target is None:
        return cited("unresolved", f"{ref.path} is not in the pinned commit")
    if target not in files:
        files[target] = _load(target)
    file = files[target]
    if ref.bad_line is not None:
        shown = ref.bad_line if len(ref.bad_line) <= 20 else f"{ref.bad_line[:20]}…"
        return cited("hallucinated", f"line {shown} cannot be a line of the file")
    last = ref.line_end or ref.line_start
    if ref.line_start is not None and ref.line_start < 1:
        return cited("hallucinated", f"line {ref.line_start} is before the first line")
    if last is not None and last > len(file.lines):
        return cited("hallucinated", f"line {last} past end of file ({len(file.lines)} lines)")
    for low, high in ref.also:
        if low < 1 or high > len(file.lines):
            bad = low if low < 1 else high
            return cited("hallucinated", f"line {bad}, written in its sentence, is not in the file")
    if ref.symbol and _candidates(ref.symbol):
        return cited(*_check_symbol(ref, file, tolerance))
    return cited("grounded", "file exists" + (", line in range" if ref.line_start else ""))


def verify(refs: Iterable[CitationRef], repo: Path, tolerance: int = 5) -> list[Citation]:
    """Check each reference against the checkout at `repo` (files parsed once per call)."""
    files: dict[Path, _File] = {}
    return [_check(ref, repo, files, tolerance) for ref in refs]


def counts(citations: Iterable[Citation]) -> dict[Grounding, int]:
    """Citations per bucket (every bucket present)."""
    out: dict[Grounding, int] = dict.fromkeys(GROUNDINGS, 0)
    for c in citations:
        out[c.status] += 1
    return out


def grounding_rate(citations: list[Citation]) -> float | None:
    """Grounded share of all citations; None when the answer cites nothing."""
    return counts(citations)["grounded"] / len(citations) if citations else None
