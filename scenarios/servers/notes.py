"""The user's notes: one markdown file per note in the trial's sandbox folder.

A note file opens with a front matter block (title, tags, created, updated) and its file name
is the note's id. Every call reads the folder afresh, so the farm's per-trial reset of the
folder keeps one trial's notes out of the next. The hidden `farm_snapshot` and `farm_restore`
tools (docs/state.md) give and put back every note as a document, for the farm only.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from mcp.types import ToolAnnotations

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    add_control,
    add_root,
    serve,
    session_root,
)
from mcp_farm.scenarios.servers.calendar import TODAY

READ_ONLY = ToolAnnotations(read_only_hint=True)
DESTRUCTIVE = ToolAnnotations(destructive_hint=True)
"""A tool that deletes or overwrites what it cannot bring back (`confirm_destructive`)."""
WORD = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")


@dataclass
class Note:
    id: str
    title: str
    tags: list[str]
    created: str
    updated: str
    body: str

    def text(self) -> str:
        meta = f"title: {self.title}\ntags: {', '.join(self.tags)}\ncreated: {self.created}\nupdated: {self.updated}"
        return f"---\n{meta}\n---\n{self.body.strip()}\n"

    def show(self) -> str:
        tags = f"tags: {', '.join(self.tags)}; " if self.tags else ""
        return f"# {self.title}\n({tags}id: {self.id}; updated {self.updated})\n\n{self.body}"


def slug(title: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", title.lower()))[:60] or "note"


class Notebook:
    def __init__(self, root: Path) -> None:
        self._root = root

    @property
    def root(self) -> Path:
        return session_root(self._root)

    def path(self, note_id: str) -> Path:
        key = note_id.strip().removesuffix(".md")
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", key):
            raise ToolError(f"not a note id: {note_id!r}; list_notes shows the ids")
        return self.root / f"{key}.md"

    def load(self, path: Path) -> Note:
        _, meta_text, body = path.read_text(encoding="utf-8").split("---\n", 2)
        meta = dict(line.split(": ", 1) for line in meta_text.strip().splitlines())
        tags = [t.strip() for t in meta.get("tags", "").split(",") if t.strip()]
        return Note(path.stem, meta["title"], tags, meta["created"], meta["updated"], body.strip())

    def get(self, note_id: str) -> Note:
        path = self.path(note_id)
        if not path.is_file():
            raise ToolError(f"no note with id {note_id!r}; list_notes shows the ids")
        return self.load(path)

    def all(self) -> list[Note]:
        notes = [self.load(p) for p in self.root.glob("*.md")]
        return sorted(notes, key=lambda n: (n.updated, n.id), reverse=True)

    def save(self, note: Note) -> None:
        self.path(note.id).write_text(note.text(), encoding="utf-8")


def build(root: Path) -> MCPServer:
    book = Notebook(root)
    server = MCPServer("notes", instructions="The user's personal notes.")

    @server.tool(annotations=READ_ONLY)
    def list_notes(tag: str | None = None) -> str:
        """List the user's notes (id, title, tags, last update), most recently updated first.

        Give `tag` to list only the notes with that tag, e.g. "work".
        """
        notes = book.all()
        if tag:
            notes = [n for n in notes if tag.strip().lower() in (t.lower() for t in n.tags)]
        if not notes:
            return f"no notes tagged {tag!r}" if tag else "no notes yet"
        return "\n".join(
            f"{n.id}\t{n.title}\t[{', '.join(n.tags)}]\tupdated {n.updated}" for n in notes
        )

    @server.tool(annotations=READ_ONLY)
    def read_note(note_id: str) -> str:
        """Read one note in full by its id (as shown by list_notes or search_notes)."""
        return book.get(note_id).show()

    @server.tool(annotations=READ_ONLY)
    def search_notes(query: str) -> str:
        """Search the text and titles of the user's notes; returns note ids, titles and the matching line."""
        words = WORD.findall(query.lower())
        if not words:
            raise ToolError("the query has no words to search for")
        hits = []
        for note in book.all():
            lines = [note.title, *note.body.splitlines()]
            score = sum(line.lower().count(w) for line in lines for w in words)
            if score:
                best = max(lines, key=lambda ln: sum(w in ln.lower() for w in words))
                hits.append((score, note, best.strip()))
        if not hits:
            return f"no notes match {query!r}"
        hits.sort(key=lambda h: (-h[0], h[1].id))
        return "\n".join(f"{n.id}\t{n.title}\t…{line}…" for _s, n, line in hits)

    @server.tool()
    def create_note(title: str, content: str, tags: list[str] | None = None) -> str:
        """Create a new note with a title and content; returns its id."""
        if not title.strip():
            raise ToolError("the note needs a title")
        note_id = slug(title)
        if book.path(note_id).exists():
            raise ToolError(f"a note with id {note_id!r} already exists; append_to_note adds to it")
        today = TODAY.isoformat()
        note = Note(note_id, title.strip(), [t.strip() for t in tags or []], today, today, content)
        book.save(note)
        return f"created note {note_id}: {note.title}"

    @server.tool()
    def append_to_note(note_id: str, text: str) -> str:
        """Add text to the end of an existing note, keeping what is already there."""
        note = book.get(note_id)
        note.body = f"{note.body.rstrip()}\n{text.strip()}"
        note.updated = TODAY.isoformat()
        book.save(note)
        return f"appended {len(text.strip())} characters to {note.id}"

    @server.tool(annotations=DESTRUCTIVE)
    def update_note(note_id: str, content: str) -> str:
        """Replace the whole content of an existing note with new content (the old text is discarded)."""
        note = book.get(note_id)
        note.body = content
        note.updated = TODAY.isoformat()
        book.save(note)
        return f"replaced the content of {note.id}"

    def snapshot() -> dict[str, object]:
        return {"notes": {n.id: _fields(n) for n in sorted(book.all(), key=lambda n: n.id)}}

    def restore(state: dict[str, object]) -> None:
        notes = state.get("notes")
        if not isinstance(notes, dict):
            raise ToolError("a snapshot holds `notes`, by id")
        for path in book.root.glob("*.md"):
            path.unlink()
        for note_id, f in notes.items():
            book.save(Note(note_id, f["title"], f["tags"], f["created"], f["updated"], f["body"]))

    add_control(server, snapshot, restore)
    return server


def _fields(note: Note) -> dict[str, object]:
    """A note as its snapshot holds it."""
    return {
        "title": note.title,
        "tags": note.tags,
        "created": note.created,
        "updated": note.updated,
        "body": note.body,
    }


def _args(parser: argparse.ArgumentParser) -> None:
    add_root(parser, "notes", "the folder holding the notes")


if __name__ == "__main__":
    serve(lambda a: build(a.root), add_args=_args)
