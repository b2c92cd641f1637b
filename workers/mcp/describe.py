"""Tool descriptions rewritten for the `descriptions` axis: the first sentence, a paraphrase,
and two tools' descriptions swapped (docs/robustness.md, "Descriptions").

The paraphrase is code, not a model: the same text always gives the same paraphrase. It
rewords plain English only. Everything a model could need verbatim is masked first and put
back unchanged: code spans and quoted text, URLs, abbreviations ("e.g."), and every token
that is not a plain word (`elicitation/create`, `read_file`, `2026-03-10`, `[FILE]`, `JSON`,
camelCase). Sentences are split only where a sentence ends, never after an abbreviation.
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import replace

from mcp_farm.workers.model.toolspec import ToolSpec

LEADING = {
    "list": "show",
    "lists": "shows",
    "search": "look through",
    "searches": "looks through",
    "read": "open and read",
    "reads": "opens and reads",
    "return": "give back",
    "get": "fetch",
    "gets": "fetches",
    "find": "locate",
    "finds": "locates",
    "create": "make",
    "creates": "makes",
    "make": "produce",
    "delete": "remove",
    "deletes": "removes",
    "remove": "take out",
    "add": "append",
    "adds": "appends",
    "send": "dispatch",
    "sends": "dispatches",
    "write": "compose",
    "open": "load",
    "move": "relocate",
    "copy": "duplicate",
    "cancel": "call off",
    "book": "reserve",
    "reply": "respond",
    "replace": "swap out",
    "suggest": "propose",
    "count": "tally",
    "download": "retrieve",
    "fetch": "retrieve",
    "retrieve": "fetch",
    "report": "tell",
    "put": "place",
    "execute": "run",
    "convert": "translate",
    "records": "saves",
    "switch": "change",
    "switches": "changes",
    "export": "output",
    "exports": "outputs",
    "archive": "file away",
    "share": "pass on",
    "use": "employ",
    "give": "pass",
    "check": "verify",
    "update": "modify",
    "edit": "modify",
    "show": "display",
    "handles": "copes with",
    "operates": "works",
    "pick out": "extract",
    "leave out": "omit",
    "look up": "find out",
    "add to": "append to",
    "search for": "look for",
    "searches for": "looks for",
}
"""Verbs reworded where a verb stands: at a sentence's start, or after `to`. Elsewhere the same
word may be a noun (`a list`, `the search engine`), so it is left alone."""

ANYWHERE = {
    "returns": "gives back",
    "returned": "given back",
    "shows": "displays",
    "shown": "displayed",
    "folder": "directory",
    "folders": "directories",
    "subfolders": "subdirectories",
    "whole": "entire",
    "entire": "whole",
    "complete": "full",
    "every": "each",
    "newest": "most recent",
    "whether": "if",
    "may": "might",
    "cannot": "can't",
    "can't": "cannot",
    "won't": "will not",
    "don't": "do not",
    "doesn't": "does not",
    "isn't": "is not",
    "via": "through",
    "specified": "given",
    "given": "supplied",
    "detailed": "thorough",
    "specific": "particular",
    "multiple": "several",
    "various": "different",
    "different": "various",
    "simultaneously": "at once",
    "currently": "at present",
    "perfect": "ideal",
    "great": "handy",
    "useful": "helpful",
    "essential": "vital",
    "comprehensive": "complete",
    "clearly": "plainly",
    "allowed": "permitted",
    "accessible": "reachable",
    "associated": "related",
    "contains": "includes",
    "includes": "contains",
    "including": "along with",
    "finding": "locating",
    "understanding": "grasping",
    "understand": "grasp",
    "retrieve": "fetch",
    "modified": "changed",
    "modification": "change",
    "new": "fresh",
    "timezone": "time zone",
    "timezones": "time zones",
    "email": "e-mail",
    "emails": "e-mails",
    "identifier": "ID",
    "quickly": "fast",
    "silently": "quietly",
    "suggest": "propose",
    "by default": "unless told otherwise",
    "web page": "webpage",
    "web pages": "webpages",
    "one by one": "one at a time",
    "out of date": "stale",
    "at least": "no fewer than",
    "in full": "completely",
    "for example": "for instance",
    "as well as": "and also",
    "a piece of": "some",
    "based on": "according to",
    "is up": "is running",
    "leads to": "points to",
    "bookmarked": "saved as bookmarks",
    "readable": "legible",
    "defined": "declared",
    "one per line": "a line each",
}
"""Words and phrases reworded wherever they stand in lower case (a capitalised one mid-sentence
is a name). A rewording keeps the sound of its first letter, so `a`/`an` before it stays right."""

ABBREVIATIONS = (
    "e.g.",
    "i.e.",
    "etc.",
    "vs.",
    "cf.",
    "approx.",
    "incl.",
    "no.",
    "dr.",
    "mr.",
    "mrs.",
    "ms.",
    "st.",
    "inc.",
    "ltd.",
    "fig.",
    "al.",
    "resp.",
)
"""Abbreviations whose full stop ends no sentence: kept as written, and never split after."""

_MASK_OPEN, _MASK_CLOSE = "\ue000", "\ue001"
_MASKED = re.compile(f"{_MASK_OPEN}(\\d+){_MASK_CLOSE}")
_SPANS = re.compile(
    r"```.*?```"  # a fenced block
    r"|`[^`\n]+`"  # a code span
    r'|"(?:[^"\n]|\n(?![ \t]*\n))*"'  # double quotes, within a paragraph
    r"|“[^”]*?”|‘[^’\n]*?’"  # curly quotes
    r"|(?<![\w'’])'[^'\n]*?'(?![\w'’])"  # single quotes (an apostrophe is no quote)
    r"|\b(?:https?|ftp|file|wss?)://[^\s<>\"'`]*[^\s<>\"'`.,;:!?)]"  # a URL
    r"|\bwww\.[^\s<>\"'`]*[^\s<>\"'`.,;:!?)]",
    re.DOTALL | re.IGNORECASE,
)
_ABBREVIATION = re.compile(
    r"(?<![\w.])(?:"
    + "|".join(re.escape(a) for a in sorted(ABBREVIATIONS, key=len, reverse=True))
    + r"|(?:[A-Za-z]\.){2,})(?![\w])",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"\ue000\d+\ue001|[^\s\ue000]+")
_EDGE = re.compile("([\"'“‘(\\[{]*)(.*?)([.,;:!?)\"'”’\\]}]*)", re.DOTALL)
_PLAIN = re.compile(r"[A-Za-z]+(?:[-'’][A-Za-z]+)*")
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*\s+(?=[A-Z0-9\ue000\"'“‘`(\[])")
_MARKER = r"\s*(?:[-*•+]|\d+[.)]|\ue000\d+\ue001[.)])\s"
"""A list item's marker at a line's start (a number may be masked)."""
_KEY_LINE = re.compile(r"\s*[\w\ue000\ue001]+:\s")
"""A `name: what it is` line, as in an `Args:` block."""
_WORDS = re.compile(
    "(?<![\\w'’\\-\ue000\ue001])("
    + "|".join(
        re.escape(w).replace(r"\ ", r"[ \t]+")
        for w in sorted({*LEADING, *ANYWHERE}, key=len, reverse=True)
    )
    + ")(?![\\w'’\\-\ue000\ue001])",
    re.IGNORECASE,
)


def first_sentence(text: str) -> str:
    """The description up to its first full stop followed by a space or line end."""
    found = re.search(r"^(.*?[.!?])(\s|$)", text.strip(), re.DOTALL)
    return found.group(1) if found else text.strip()


def paraphrase(text: str) -> str:
    """A deterministic rewrite: verbs, words and phrases reworded from fixed tables, and the
    sentences of each prose paragraph in reverse order; a description these leave as it was
    that opens with a noun phrase ("The shared drive's files, …") is read as what the tool
    gives back. What is masked (the module's docstring) comes back as it was. The same text
    always gives the same paraphrase."""
    if _MASK_OPEN in text or _MASK_CLOSE in text:
        return text  # the masks' own characters: nothing could be put back for certain
    kept: list[str] = []
    masked = _mask(text.strip(), kept)
    paragraphs = [p for p in re.split(r"\n[ \t]*\n", masked) if p.strip()]
    rewritten = [_paragraph(p) for p in paragraphs]
    if rewritten and _words(rewritten) == _words(paragraphs):
        rewritten[0] = _gives_back(rewritten[0])
    return _MASKED.sub(lambda m: kept[int(m.group(1))], "\n\n".join(rewritten))


def _words(paragraphs: list[str]) -> list[str]:
    return re.findall(r"[a-z0-9]+", " ".join(paragraphs).lower())


AUXILIARIES = frozenset(
    {"is", "are", "was", "were", "be", "been", "being", "has", "have", "had", "can", "could"}
    | {"will", "would", "shall", "should", "must", "may", "might", "does", "do", "did"}
)
"""Words that make a clause a sentence of its own rather than a noun phrase."""


def _gives_back(paragraph: str) -> str:
    """`The X, …` as `Gives back the X, …` when its first clause (up to a comma, colon,
    semicolon or bracket) has no auxiliary verb: a noun phrase naming what the tool gives."""
    found = re.match(r"The\s+([^,;:(.!?]*)", paragraph)
    if found is None or AUXILIARIES & set(found.group(1).lower().split()):
        return paragraph
    return "Gives back the " + paragraph[4:].lstrip()


def verbatim(text: str) -> list[str]:
    """What a paraphrase of `text` keeps as written, in order: code spans, quoted text, URLs,
    abbreviations and every token that is not a plain word."""
    kept: list[str] = []
    _mask(text.strip(), kept)
    return kept


def _mask(text: str, kept: list[str]) -> str:
    """The text with every span and token to keep verbatim replaced by a numbered mask."""

    def mask(value: str) -> str:
        kept.append(value)
        return f"{_MASK_OPEN}{len(kept) - 1}{_MASK_CLOSE}"

    def token(found: re.Match[str]) -> str:
        """A token's core masked unless it is a plain word (or already a mask): a core with
        a digit, `_`, `/`, `.`, `@` or any other sign inside, in capitals, or in camelCase."""
        whole = found.group(0)
        if whole.startswith(_MASK_OPEN):
            return whole
        lead, core, trail = _edge(whole)
        plain = _PLAIN.fullmatch(core) is not None
        capitals = len(core) > 1 and core.isupper()
        camel = re.search(r"[a-z][A-Z]", core) is not None
        if not core or (plain and not capitals and not camel):
            return whole
        return f"{lead}{mask(core)}{trail}"

    text = _SPANS.sub(lambda m: mask(m.group(0)), text)
    text = _ABBREVIATION.sub(lambda m: mask(m.group(0)), text)
    return _TOKEN.sub(token, text)


def _edge(token: str) -> tuple[str, str, str]:
    """A token's opening marks, its core, and its closing punctuation."""
    found = _EDGE.fullmatch(token)
    assert found is not None  # every part may be empty: any token matches
    lead, core, trail = found.groups()
    return lead, core, trail


def _paragraph(text: str) -> str:
    """One paragraph reworded; a prose paragraph's sentences in reverse order. A paragraph of
    several lines that holds a list (`-`, `*`, `1.`) or `name: …` lines keeps its lines and
    their order."""
    lines = text.strip().splitlines()
    if len(lines) > 1 and any(re.match(_MARKER, ln) or _KEY_LINE.match(ln) for ln in lines):
        return "\n".join(_reword(line.rstrip()) for line in lines)
    flat = re.sub(r"\s+", " ", text.strip())
    cuts = [0, *(m.end() for m in _SENTENCE_END.finditer(flat)), len(flat)]
    sentences = [flat[a:b].strip() for a, b in itertools.pairwise(cuts)]
    sentences = [_reword(s) for s in reversed(sentences) if s]
    # The last sentence may have had no full stop; moved before another, it needs one.
    ended = [s if re.search(r"[.!?][\"'”’)\]]*$", s) else s + "." for s in sentences[:-1]]
    return " ".join([*ended, *sentences[-1:]])


def _reword(sentence: str) -> str:
    """A sentence with its verbs, words and phrases reworded, in one pass (a rewording is
    never reworded again); `a`/`an` before a reworded word follows its new first letter."""
    out: list[str] = []
    at = 0
    for m in _WORDS.finditer(sentence):
        found = m.group(1)
        new = _new_word(sentence, m.start(), found)
        out.append(sentence[at : m.start()])
        if new != found:
            _article(out, new)
        out.append(new)
        at = m.end()
    out.append(sentence[at:])
    return "".join(out)


def _new_word(sentence: str, start: int, found: str) -> str:
    """What a table word becomes where it stands: a verb's rewording where a verb stands,
    else its rewording as a word; a capitalised word inside a sentence is a name, kept."""
    key = re.sub(r"[ \t]+", " ", found.lower())
    before = re.sub("^" + _MARKER, "", sentence[:start])
    first = not re.search(r"[A-Za-z0-9\ue001]", before)
    if key in LEADING and (first or re.search(r"\bto\s+$", before)):
        return _cased(found, LEADING[key])
    if key in ANYWHERE and (first or found[0].islower()):
        return _cased(found, ANYWHERE[key])
    return found


def _article(out: list[str], new: str) -> None:
    """Set an `a` or `an` just before a reworded word to what its first letter asks."""
    text = out[-1] if out else ""
    found = re.search(r"(?<![\w'’\-])(an?|An?)(\s+)$", text)
    if not found:
        return
    article = "an" if new[0].lower() in "aeiou" else "a"
    article = article.capitalize() if found.group(1)[0].isupper() else article
    out[-1] = text[: found.start()] + article + found.group(2)


def _cased(found: str, new: str) -> str:
    return new[0].upper() + new[1:] if found[0].isupper() else new


def swapped(listed: list[ToolSpec], own: list[ToolSpec], rng: random.Random) -> list[ToolSpec]:
    """Two tools' descriptions exchanged, so the model reads one tool's purpose under another's
    name: two own tools drawn by `rng` (the trial's seed), or with one own tool, it and a drawn
    distractor. Only tools whose descriptions differ are drawn; with no such pair, the list is
    as it was."""
    mine = [i for i, t in enumerate(listed) if t in own]
    if not mine:
        return listed
    first = rng.choice(mine)
    text = listed[first].description
    mates = [i for i in mine if i != first and listed[i].description != text]
    if not mates:
        mates = [i for i in range(len(listed)) if i not in mine and listed[i].description != text]
    if not mates:
        return listed
    second = rng.choice(mates)
    out = list(listed)
    out[first] = replace(listed[first], description=listed[second].description)
    out[second] = replace(listed[second], description=text)
    return out
