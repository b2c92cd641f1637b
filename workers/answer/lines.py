"""Reading the line or lines an answer writes beside a cited path, in every common form.

A line is read after the path (`path:12`, `**path**:12`, `File "path", line 12`, `path#L12`,
`path?plain=1#L12`, `path@commit:12`, `[path](url#L12)`, `path around line 12`, `path, line #12`,
`path – line 12`, `path → line 12`, `path [line 12]`, ranges and lists
`path, lines 12, 14 and 20`, `1,000`), before it (`line 12 of path`), in a Markdown table's line
column, or as a line-like token beside it in no such form (`beside`). A number that stands where
a line goes but cannot be read (signed, glued to a letter, wrapped in brackets, too long, `#12`
beside the path) is kept as `bad`: such a citation is never grounded, since what it claims
cannot be checked.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

LINE_DIGITS = 9
"""Longer line numbers are no line of any file: such a citation is never grounded."""

_H = r"[^\S\n]*"
HYPHENS = "-\u2010\u2011\u2012\u2212"
"""ASCII hyphen, hyphen, non-breaking hyphen, figure dash and minus sign: a word processor turns
one into another, so each signs a number (`line \u221212` is an offset) and parts a range."""
DASHES = f"{HYPHENS}\u2013\u2014"
"""Every mark that parts a range: the hyphens, en and em dash."""
# A line word, optionally approximate and with its number mark: `line`, `lines`, `ln`, `l.`,
# `L`, `line #`, `line no.`, `line number`, `line:`, `~line`. The number may follow on the next
# line (prose is hard-wrapped).
_WORD = (
    rf"(?:[~≈]{_H})?(?i:lines?|ln\.?|ll\.?|l\.?)(?:{_H}(?:#|:|(?i:nos?\.|numbers?|num\.)))?"
    rf"{_H}(?:\n{_H})?"
)
WORD = re.compile(_WORD)
WORD_BEFORE = re.compile(rf"(?<![\w.-]){_WORD}")
SCRIPT_DIGITS = "⁰¹²³⁴-⁹₀-₉"
"""Superscript and subscript digits (`line ⁹⁹⁹`, `path:₁₂`): a footnote mark or a formula's
index, never a line anyone can check, so where a line goes they are an unreadable line."""
# A number: grouped by thousands (`1,000`) or plain; a sign makes it no line, `~` or `≈` an
# approximate one (read as written); superscript or subscript digits make it unreadable.
NUMBER = re.compile(
    rf"(?P<mark>[{HYPHENS}+~≈])?(?:(?P<digits>\d{{1,3}}(?:,\d{{3}})+(?!\d)|\d+)"
    rf"|(?P<script>[{SCRIPT_DIGITS}]+))"
)
SIGNS = (*HYPHENS, "+")
RANGE = re.compile(rf"{_H}(?:[{DASHES}]|\.{{2,3}}|…|(?i:to|through|thru|until)(?=\s)){_H}")
LIST = re.compile(rf"{_H}(?:,{_H}(?:(?i:and|or)(?=\s){_H})?|(?i:and|or|&)(?=\s){_H}|/{_H})")
SEMICOLON = re.compile(rf"{_H};{_H}")
"""Between the numbers of a list after `lines` (`lines 2; 40`); elsewhere `;` ends a clause."""
# After a listed number without a line word of its own, what makes it a count rather than a
# line (`path:2, 3 more callers`, `2, 40 uses`): `more`, `other`, or a plural noun.
COUNTED = re.compile(rf"{_H}(?i:more|others?|(?!has\b|is\b|was\b|does\b)[a-z]+s)\b")
# What makes a number no line: glued to a letter, `_` or a decimal part (`99999a`, `12行`,
# `12.5`). A `:` after it (`12:5`, a column) is no glue.
GLUED = re.compile(r"(?:\.\d|\w)[\w.]*")
COUNT = re.compile(rf"{_H}(?i:lines?)(?!\w)")
"""`path (300 lines)`: a size, not a line."""
# Marks that join a line to a path only with a line word after them (`path – line 12`,
# `path → line 12`, `path | line 12`, `path @ line 12`, `path [line 12]`): a bare number after
# them is a count, a footnote or a version as often as a line.
_MARK = rf"(?:->|=>|[{DASHES}|→@\[])"
# From the end of a path to its first number: closing marks (backtick, bold, quotes, a
# bracket), a possessive, a commit or ref (`@abc123`), a URL query before a fragment, one join
# mark (`:` `#` `,` `(`, or one of `_MARK`), then up to two position words.
JOIN = re.compile(
    rf"(?:[`*\"”»\]]|['’](?!s(?!\w)))*(?:['’]s(?!\w))?(?:@[\w.-]+)?(?:\?[\w=&%.;-]+(?=#))?"
    rf"{_H}(?:(?:[:#,]|(?P<open>\()|(?P<mark>{_MARK})){_H})?"
    rf"(?P<preps>(?:(?i:at|on|around|near|about|approximately|approx\.|roughly|circa|in|from|"
    rf"between)(?=\s){_H}){{0,2}})"
)
WORD_NEEDED = re.compile(r"(?i)\b(?:in|from|between)\b")
"""Position words after which a bare number is no line (`path in 3 places`)."""
LINK = re.compile(r"[`*\"'”’]*\]\((?P<url>[^)\s]*)\)")
FRAGMENT = re.compile(r"#(?=[Ll]?\d)|:(?=\d)")
CLOSE = {"(": re.compile(rf"{_H}\)"), "[": re.compile(rf"{_H}\]")}
# A line-like number reached through marks only (`path:[12]`, `path:(12)`, `path#L-12`), or
# a line word a few words on with a number after it (`path (see line ≈12)`).
STRAY = re.compile(rf"[`*\"'”’»\]]*[:#](?!:)[^\w\s]*[Ll]?[^\w\s]*[\d{SCRIPT_DIGITS}][^\s]*")
STRAY_WORD = re.compile(
    rf"[`*\"'”’»\]]*{_H}(?:[,(]|{_MARK})?{_H}(?:[A-Za-z]+\.?{_H}){{0,2}}?(?<!\w)"
    rf"(?P<word>(?i:lines?|ln|ll|l)(?!\w)|L(?=\d))[^\w\n]{{0,3}}[\d{SCRIPT_DIGITS}][^\s)\]]*"
)
OF = re.compile(
    rf"{_H}(?i:of|in|inside|within|from)(?:{_H}(?i:the))?(?:{_H}(?i:file|module))?{_H}"
    r"[`*\"'“‘\[(]*"
)
STRAY_NUMBER = re.compile(rf"[^\w\n]{{0,3}}[\d{SCRIPT_DIGITS}][^\s]*")
PATH_START = re.compile(r"[\w.-]*[/\\]?[\w.-]*\w\.\w")
"""The start of a file name (`pkg/b.py`, `b.py`): enough to tell `of b.py` from `of it`."""
BEFORE_WINDOW = 80
_SPELLED = (
    r"(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
    r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|"
    r"seventy|eighty|ninety|hundred|thousand|million)"
)
# A line number in words or Roman numerals (`line nine hundred`, `line XII`): a line nobody can
# check without guessing how it was meant, so it is read as an unreadable line. A lone `I` is
# the pronoun (`the line I mean`), so a Roman numeral needs two letters or one other than `I`.
_UNREAD = rf"(?i:{_SPELLED}(?:[\s-]+(?:and\s+)?{_SPELLED})*)\b|(?:[IVXLCDM]{{2,}}|[VX])\b"
LINE_LIKE = re.compile(
    rf"(?<!\w)(?:(?:(?:[~≈]\s*)?(?i:lines?|ln\.?|ll\.|l\.)\s*(?:[#~:≈]|(?i:nos?\.|numbers?|num\.))?"
    rf"\s*[{HYPHENS}+~≈]?[\d{SCRIPT_DIGITS}]|L\d|#\d)\w*|(?i:lines?)[^\S\n]+(?:{_UNREAD}))"
)
"""A token that reads as a line wherever it stands (`line 12`, `lines: 3`, `line no. 3`,
`l. 3`, `L12`, `#12`), or claims one in words (`line twelve`, `line XII`)."""
NEAR = 40
"""Characters beside a path, in its sentence, where a line-like token makes it a citation of
that line, read or unreadable (see `beside`)."""


@dataclass(frozen=True)
class Lines:
    """What was written as a citation's lines, and where that writing ends."""

    end: int
    """Where the citation's text ends in the prose (its start when written before the path)."""
    start: int | None = None
    last: int | None = None
    bad: str | None = None
    """Written as a line but cannot be read as one."""

    @property
    def read(self) -> bool:
        return self.start is not None or self.bad is not None


def _element(prose: str, at: int, word: bool) -> tuple[re.Match[str], bool] | None:
    """A number at `at`, with its own line word before it when `word` allows one: the number's
    match and whether a word was written."""
    said = WORD.match(prose, at) if word else None
    m = NUMBER.match(prose, said.end() if said else at)
    if m is None and said is not None:
        return None
    return (m, said is not None) if m else None


def numbers(prose: str, at: int, *, word_needed: bool = False) -> Lines | None:
    """The line, range or list written at `at` (`12`, `L12-L20`, `lines 1, 5 and 9`,
    `line #1,000`), or None when no number stands there. Every number counts: a list is held at
    its smallest and largest (any number past the end fails it)."""
    first = _element(prose, at, True)
    if first is None or (word_needed and not first[1]):
        return None
    start_at = first[0].start()
    plural = bool(re.match(r"(?i)lines|ll", prose[at:start_at].strip()))
    found = [first[0]]
    while True:
        last = found[-1]
        glued = GLUED.match(prose, last.end())
        if glued is not None:
            return Lines(glued.end(), bad=prose[start_at : glued.end()])
        ranged = RANGE.match(prose, last.end())
        listed = None if ranged else LIST.match(prose, last.end())
        if listed is None and ranged is None and plural:
            listed = SEMICOLON.match(prose, last.end())
        sep = ranged or listed
        nxt = _element(prose, sep.end(), True) if sep else None
        if sep is None or nxt is None:
            break
        if listed and not (nxt[1] or plural) and COUNTED.match(prose, nxt[0].end()):
            break
        found.append(nxt[0])
    end = found[-1].end()
    if COUNT.match(prose, end) and len(found) == 1 and not first[1]:
        return None  # `path (300 lines)` is a size
    for m in found:
        signed = m.group("mark") in SIGNS or m.group("script") is not None
        if signed or len(m.group("digits").replace(",", "").lstrip("0")) > LINE_DIGITS:
            return Lines(end, bad=prose[start_at:end])
    values = [int(m.group("digits").replace(",", "")) for m in found]
    return Lines(end, min(values), max(values))


def _link(prose: str, at: int) -> Lines | None:
    """`[path](url#L12)`: the line in the link's target; the target itself is consumed (it
    names the same file), with or without a line."""
    m = LINK.match(prose, at)
    if m is None:
        return None
    fragment = FRAGMENT.search(m.group("url"))
    if fragment is not None:
        read = numbers(prose, m.start("url") + fragment.end())
        if read is not None:
            return Lines(m.end(), read.start, read.last, read.bad)
    return Lines(m.end())


COMPILER = re.compile(r"\((?P<line>\d+)(?:,\d+)?\):")
"""A compiler's `path(127):` or `path(127,5):` (line, then column): the path's line."""


FOOTNOTE = re.compile(r"[\u00b9\u00b2\u00b3\u2070\u2074-\u2079]{1,2}(?!\w)")
"""One or two superscript digits glued to a path (`conn.py²`): a footnote mark, no line. More
(`conn.py⁹⁹⁹`) is a line written where none can be read: `bad`."""
GLUED_SCRIPT = re.compile(rf"[{SCRIPT_DIGITS}]+\w*")


def after(prose: str, at: int) -> Lines:
    """The lines written after a path that ends at `at` (nothing read: `Lines(at)`)."""
    footnote = FOOTNOTE.match(prose, at)
    if footnote is not None:
        return Lines(footnote.end())
    glued = GLUED_SCRIPT.match(prose, at)
    if glued is not None:
        return Lines(glued.end(), bad=glued.group())
    compiler = COMPILER.match(prose, at)
    if compiler is not None:
        digits = compiler.group("line")
        if len(digits.lstrip("0")) > LINE_DIGITS:
            return Lines(compiler.end(), bad=digits)
        return Lines(compiler.end(), int(digits), int(digits))
    link = _link(prose, at)
    if link is not None:
        return link
    join = JOIN.match(prose, at)
    if join is not None:
        needed = bool(join["mark"] or WORD_NEEDED.search(join["preps"]))
        read = numbers(prose, join.end(), word_needed=needed)
        if read is not None:
            end = read.end
            opened = join["open"] or join["mark"]
            if opened in CLOSE and read.bad is None:
                close = CLOSE[opened].match(prose, end)
                end = close.end() if close else end
            return Lines(end, read.start, read.last, read.bad)
    stray = STRAY.match(prose, at)
    if stray is not None:
        return Lines(stray.end(), bad=stray.group(0).strip())
    return _a_few_words_on(prose, at)


def _a_few_words_on(prose: str, at: int) -> Lines:
    """A line word up to two words after the path with a number after it (`path, see line 12`,
    `path (see line ≥12)`): read when it can be, else unreadable."""
    stray = STRAY_WORD.match(prose, at)
    if stray is None:
        return Lines(at)
    read = numbers(prose, stray.start("word"))
    if read is not None and _of_a_path(prose, read.end):
        return Lines(at)  # `a.py and line 3 of b.py`: b.py's line
    if read is not None and read.bad is None:
        return Lines(read.end, read.start, read.last)
    return Lines(stray.end(), bad=stray.group(0).strip(" ,(`*\"'”’»]"))


def _of_a_path(prose: str, at: int) -> bool:
    """Whether `of path` follows `at`: the number before it is that path's line."""
    of = OF.match(prose, at)
    return of is not None and PATH_START.match(prose, of.end()) is not None


FENCE = re.compile(
    r"[^\S\n]*(?:`{3,}|~{3,})[^\S\n]*(?:[A-Za-z][\w+#-]*:)?(?P<fields>(?:[^\s:`]+:){1,2})"
)
"""A code fence whose header names the lines before the path, as some editors write a
reference to code (```` ```3600:3610:pkg/a.py ````: lines 3600-3610; a language may lead)."""


def _fence(prose: str, at: int) -> Lines | None:
    """The lines a code fence's header writes before a path at `at` (`3600:3610:path`), each
    field a plain number (else the whole is unreadable)."""
    low = prose.rfind("\n", 0, at) + 1
    m = FENCE.fullmatch(prose, low, at)
    if m is None:
        return None
    fields = m.group("fields")
    if not re.search(rf"[\d{SCRIPT_DIGITS}]", fields):
        return None  # a language or a name (```` ```python:path ````), no line
    values: list[int] = []
    for field in fields.rstrip(":").split(":"):
        if not field.isascii() or not field.isdigit() or len(field.lstrip("0")) > LINE_DIGITS:
            return Lines(m.start("fields"), bad=fields.rstrip(":"))
        values.append(int(field))
    return Lines(m.start("fields"), min(values), max(values))


def before(prose: str, at: int) -> Lines | None:
    """The lines written before a path that starts at `at` (`line 12 of path`, `lines 3-9 in
    the file path`, a code fence's `3600:3610:path`); `end` is where that writing starts."""
    fence = _fence(prose, at)
    if fence is not None:
        return fence
    low = max(0, at - BEFORE_WINDOW)
    for word in WORD_BEFORE.finditer(prose, low, at):
        read = numbers(prose, word.start())
        if read is not None and OF.fullmatch(prose, read.end, at):
            return Lines(word.start(), read.start, read.last, read.bad)
        stray = STRAY_NUMBER.match(prose, word.end())
        if read is None and stray is not None and OF.fullmatch(prose, stray.end(), at):
            return Lines(word.start(), bad=prose[word.start() : stray.end()])
    return None


def beside(prose: str, low: int, path: tuple[int, int], high: int) -> Lines | None:
    """A line-like token within `NEAR` characters right after the path (up to `high`), else
    right before it (from `low`); the caller bounds both sides by the path's sentence and by
    the other citations. A line word with a plain number (`path: `f` (line 12)`) is read; any
    other token (`path (#12)`, `line 12a`) claims a line that cannot be checked: `bad`."""
    start, end = path
    found = LINE_LIKE.search(prose, end, min(high, end + NEAR))
    if found is None:
        found = next(reversed(list(LINE_LIKE.finditer(prose, max(low, start - NEAR), start))), None)
    if found is None:
        return None
    read = numbers(prose, found.start()) if found.group()[0] != "#" else None
    if read is None or read.bad is not None:
        return Lines(found.start() if found.start() < start else found.end(), bad=found.group())
    return Lines(found.start() if found.start() < start else read.end, read.start, read.last)


# ------------------------------------------------------------------ Markdown tables

SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
"""A table's delimiter row: cells of one hyphen or more, each with an optional `:` at either end
(GitHub's rule; `|:-|--:|` is one)."""
_LINE_WORD = r"(?:lines?|ll|ln|l#?|#|(?P<loose>loc(?:ation)?|where|pos(?:ition)?))"
_HEAD_WORD = r"(?:start|end|first|last|from|to|begin|cited|approx\.?|range|span|#|no\.?|nos?\.|numbers?|num\.?)"
LINE_HEAD = re.compile(
    rf"(?i)^(?:{_HEAD_WORD}[\s_-]*)*{_LINE_WORD}(?:\(s\))?(?:[\s_-]*{_HEAD_WORD})*$"
)
"""A header that names a line column: a line or position word (`Line`, `Lines`, `Line(s)`, `Ln`,
`L`, `#`, `Location`, `Where`, `Position`) with words of range or number beside it (`Line #`,
`Line no.`, `Line range`, `Start line`, `End line`); a bracketed aside is dropped first
(`Lines (approx.)`)."""
ASIDE = re.compile(r"\s*\([^)]*\)\s*")


def _cells(line: str, offset: int) -> list[tuple[int, int]]:
    """The (start, end) of each cell of a table row, outer pipes aside."""
    bars = [m.start() for m in re.finditer(r"(?<!\\)\|", line)]
    edges = [-1, *bars, len(line)]
    cells = [(a + 1, b) for a, b in itertools.pairwise(edges)]
    if cells and not line[: cells[0][1]].strip():
        cells = cells[1:]
    if cells and not line[cells[-1][0] :].strip():
        cells = cells[:-1]
    return [(offset + a, offset + b) for a, b in cells]


LOOSE_START = re.compile(rf"[:#]?[^\S\n]*(?:{_WORD})?[\d{SCRIPT_DIGITS}]")
"""How a position column's cell starts when it holds a line (`12`, `L12`, `line 12`, `:12`)."""


@dataclass(frozen=True)
class LineCell:
    """A row's cell in a line column."""

    span: tuple[int, int]
    strict: bool
    """Under a line word (`Line`): any number in it is its line. Under a position word
    (`Location`, `Where`): only a cell that starts with a line holds one."""


def _line_head(head: str) -> LineCell | None:
    """Whether a header cell names a line column (see `LINE_HEAD`), as a cell of no span whose
    `strict` says which kind."""
    bare = head.strip().strip("*`_ ")
    m = LINE_HEAD.match(bare) or LINE_HEAD.match(ASIDE.sub(" ", bare).strip())
    return LineCell((0, 0), m.group("loose") is None) if m else None


def table_lines(prose: str) -> list[tuple[tuple[int, int], tuple[LineCell, ...]]]:
    """In each Markdown table with a line column (headed `Line`, `Lines`, `Line #`, `Ln`, `L`,
    `Start line`, `Location`, …): per row, the span of each other cell and the spans of the
    row's line cells (two with `Start line` and `End line`: their lines make one range)."""
    rows: list[tuple[int, str]] = []
    offset = 0
    for line in prose.splitlines(keepends=True):
        rows.append((offset, line.rstrip("\r\n")))
        offset += len(line)
    found: list[tuple[tuple[int, int], tuple[LineCell, ...]]] = []
    for i in range(len(rows) - 1):
        start, head = rows[i]
        if "|" not in head or not SEPARATOR.match(rows[i + 1][1]):
            continue
        kinds = {k: _line_head(prose[a:b]) for k, (a, b) in enumerate(_cells(head, start))}
        columns = {k: kind.strict for k, kind in kinds.items() if kind is not None}
        if not columns:
            continue
        for row_start, row in rows[i + 2 :]:
            if "|" not in row:
                break
            cells = _cells(row, row_start)
            line_cells = tuple(
                LineCell(cells[k], strict) for k, strict in columns.items() if k < len(cells)
            )
            if line_cells:
                found += [(cell, line_cells) for k, cell in enumerate(cells) if k not in columns]
    return found


def in_cell(prose: str, cell: LineCell) -> Lines:
    """The line a table's line cell holds (`12`, `L12`, `:12`, `line 12`, `12-20`); a cell with
    a number that cannot be read is `bad`, one without any number reads nothing (nor does a position column's cell that does not start
    with a line: `Location | in send()`). `end` is the cell's end."""
    low, high = cell.span
    text = prose[low:high]
    content = low + len(text) - len(text.lstrip(" \t*`"))
    if not cell.strict and not LOOSE_START.match(prose, content):
        return Lines(high)
    colon = re.compile(r":[^\S\n]*").match(prose, content)  # `path | :12`, a split `path:12`
    read = numbers(prose, colon.end() if colon else content)
    rest = prose[read.end : high].strip(" \t*`") if read else ""
    if read is not None and read.bad is None and not rest:
        return Lines(high, read.start, read.last)
    if re.search(rf"[\d{SCRIPT_DIGITS}]", text):
        return Lines(high, bad=text.strip())
    return Lines(high)


def in_cells(prose: str, cells: tuple[LineCell, ...]) -> Lines:
    """The lines a row's line cells hold together (`Start line | End line`: one range); an
    unreadable one makes them all unreadable. `end` is the last cell's end."""
    read = [in_cell(prose, cell) for cell in cells]
    end = max(r.end for r in read)
    bad = next((r.bad for r in read if r.bad is not None), None)
    if bad is not None:
        return Lines(end, bad=bad)
    starts = [r.start for r in read if r.start is not None]
    lasts = [r.last for r in read if r.last is not None]
    if not starts or not lasts:
        return Lines(end)
    return Lines(end, min(starts), max(lasts))
