"""The user's mailbox: one text file per message under inbox/, sent/ and drafts/ of the sandbox.

A message file is `Header: value` lines, a blank line, then the body. Every call reads the
folders afresh and sending writes a new file, so nothing lives in the server's memory and the
farm's per-trial reset of the sandbox folder is all the isolation a trial needs.
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
    add_root,
    serve,
    session_root,
)
from mcp_farm.scenarios.servers.calendar import TODAY

READ_ONLY = ToolAnnotations(read_only_hint=True)
ME = "Sam Carter <sam.carter@tessera.dev>"
SENT_AT = f"{TODAY.isoformat()} 09:00"
"""Mail sent during a trial is stamped with the fixed "today", so results are repeatable."""
ADDRESS = re.compile(r"^[^@\s<>,]+@[^@\s<>,]+\.[a-z]{2,}$", re.IGNORECASE)
WORD = re.compile(r"[a-z0-9@.]+")


@dataclass(frozen=True)
class Message:
    id: str
    headers: dict[str, str]
    body: str

    @property
    def unread(self) -> bool:
        return self.headers.get("Unread", "no") == "yes"

    def summary(self) -> str:
        flag = "unread" if self.unread else "read"
        h = self.headers
        who = h["From"] if self.id.startswith("msg-") else f"to {h['To']}"
        return f"{self.id}  {h['Date']}  {who}  |  {h['Subject']}  ({flag})"

    def full(self) -> str:
        head = "\n".join(f"{k}: {self.headers[k]}" for k in ("From", "To", "Date", "Subject"))
        return f"Id: {self.id}\n{head}\n\n{self.body}"


def parse(path: Path) -> Message:
    head, _, body = path.read_text(encoding="utf-8").partition("\n\n")
    headers = dict(line.split(": ", 1) for line in head.splitlines())
    return Message(path.stem, headers, body.strip())


def write(path: Path, headers: dict[str, str], body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    head = "\n".join(f"{k}: {v}" for k, v in headers.items())
    path.write_text(f"{head}\n\n{body.strip()}\n", encoding="utf-8")


class Mailbox:
    def __init__(self, root: Path) -> None:
        self._root = root

    @property
    def root(self) -> Path:
        return session_root(self._root)

    def folder(self, name: str) -> list[Message]:
        found = [parse(p) for p in sorted((self.root / name).glob("*.txt"))]
        return sorted(found, key=lambda m: (m.headers["Date"], m.id), reverse=True)

    def get(self, email_id: str) -> Message:
        key = email_id.strip().removesuffix(".txt")
        for name in ("inbox", "sent", "drafts"):
            path = self.root / name / f"{key}.txt"
            if re.fullmatch(r"[a-z]+-\d+", key) and path.is_file():
                return parse(path)
        raise ToolError(f"no email with id {email_id!r}; list_inbox or search_email show ids")

    def next_id(self, name: str, prefix: str) -> Path:
        numbers = [int(p.stem.split("-")[1]) for p in (self.root / name).glob(f"{prefix}-*.txt")]
        return self.root / name / f"{prefix}-{max(numbers, default=0) + 1:04d}.txt"


def addresses(to: str) -> list[str]:
    """`a@x.org, Name <b@y.org>` → the bare addresses; anything else is an error."""
    parts = [a.strip() for a in re.split(r"[,;]", to) if a.strip()]
    found = [m.group(1).strip() if (m := re.search(r"<([^>]*)>", a)) else a for a in parts]
    bad = [a for a in found if not ADDRESS.match(a)]
    if not found or bad:
        raise ToolError(f"not an email address: {', '.join(bad) or repr(to)}")
    return found


def build(root: Path) -> MCPServer:
    box = Mailbox(root)
    server = MCPServer("email", instructions=f"The user's email ({ME}). Today is {TODAY}.")

    @server.tool(annotations=READ_ONLY)
    def list_inbox(unread_only: bool = False, limit: int = 20) -> str:
        """List the messages in the user's inbox, newest first, with id, date, sender and subject.

        Today is Tuesday 2026-03-10.
        """
        mail = [m for m in box.folder("inbox") if m.unread or not unread_only]
        if not mail:
            return "no unread messages" if unread_only else "the inbox is empty"
        return "\n".join(m.summary() for m in mail[: max(1, limit)])

    @server.tool(annotations=READ_ONLY)
    def read_email(email_id: str) -> str:
        """Read one email in full (headers and body) by its id, e.g. msg-1040."""
        return box.get(email_id).full()

    @server.tool(annotations=READ_ONLY)
    def search_email(query: str) -> str:
        """Search the user's received and sent email by sender, subject or words in the body.

        Every word of the query must occur; returns matching ids, newest first.
        """
        words = WORD.findall(query.lower())
        if not words:
            raise ToolError("the query has no words to search for")
        hits = [
            m
            for m in box.folder("inbox") + box.folder("sent")
            if all(w in m.full().lower() for w in words)
        ]
        if not hits:
            return f"no email matches {query!r}"
        hits.sort(key=lambda m: m.headers["Date"], reverse=True)
        return "\n".join(m.summary() for m in hits)

    @server.tool()
    def send_email(to: str, subject: str, body: str) -> str:
        """Send a new email now; `to` is one or more addresses separated by commas."""
        recipients = addresses(to)
        path = box.next_id("sent", "sent")
        headers = {"From": ME, "To": ", ".join(recipients), "Date": SENT_AT, "Subject": subject}
        write(path, headers | {"Unread": "no"}, body)
        return f"sent {path.stem} to {', '.join(recipients)}: {subject}"

    def answer(email_id: str, body: str, folder: str, prefix: str) -> Message:
        original = box.get(email_id)
        subject = original.headers["Subject"]
        subject = subject if subject.lower().startswith("re:") else f"Re: {subject}"
        headers = {
            "From": ME,
            "To": original.headers["From"],
            "Date": SENT_AT,
            "Subject": subject,
            "In-Reply-To": original.id,
            "Unread": "no",
        }
        path = box.next_id(folder, prefix)
        write(path, headers, body)
        return Message(path.stem, headers, body)

    @server.tool()
    def reply_to_email(email_id: str, body: str) -> str:
        """Reply to the sender of an email (by its id) and send the reply now."""
        sent = answer(email_id, body, "sent", "sent")
        return f"sent {sent.id} to {sent.headers['To']}: {sent.headers['Subject']}"

    @server.tool()
    def draft_reply(email_id: str, body: str) -> str:
        """Write a reply to an email (by its id) and save it in Drafts without sending it."""
        draft = answer(email_id, body, "drafts", "draft")
        return f"saved {draft.id} in Drafts (not sent): {draft.headers['Subject']}"

    return server


def _args(parser: argparse.ArgumentParser) -> None:
    add_root(parser, "mail", "folder holding the mailbox")


if __name__ == "__main__":
    serve(lambda a: build(a.root), add_args=_args)
