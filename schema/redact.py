"""Keeping credentials out of what the farm prints, logs and stores.

Database and broker URLs may carry a password (`postgresql+psycopg://farm:…@head/farm`,
`redis://:…@head:6379/0`) and some URLs carry a key in their query (`?api_key=…`). Anything that
shows such a URL to a person, a log or a table goes through `mask_url` first.

Secrets the farm itself was given (an endpoint's API key read from `api_key_env`, the database
and broker passwords, `{env:VAR}` values handed to servers) are remembered where they are read
(`remember_secret`) and masked wherever they turn up (`mask_secrets`): in every text the store
writes (its one text rule), in log records, and in errors shown on the terminal. An endpoint that
echoes its Authorization header, or a server that prints its token, cannot put it in a result.
"""

from __future__ import annotations

import logging
import re
import threading
from urllib.parse import urlsplit

MASK = "***"

MASK_MIN_CHARS = 4
"""In a message about one server, its environment values shorter than this are not masked: a
`1` or a `no` is no secret, and replacing it would garble the message."""

REMEMBER_MIN_CHARS = 8
"""Secrets shorter than this are not masked everywhere: a short password (`farm`, `test`) is
also a word of ordinary text, ids and paths, and masking every occurrence of it would garble
what is stored. Give the farm's services longer secrets."""

_KNOWN: set[str] = set()
_KNOWN_LOCK = threading.Lock()
_known_pattern: re.Pattern[str] | None = None

# scheme://user:password@ — the password runs to the last `@` before any whitespace, the way
# SQLAlchemy and urllib read it. A URL whose path holds an `@` may be masked too generously;
# for a helper that guards secrets, hiding too much is the safe way to be wrong.
_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)(?P<secret>[^\s]*)@")

# ?password=… / &api_key=… / &token=…: any query parameter whose name suggests a credential.
_QUERY = re.compile(
    r"(?P<head>[?&;][^=&#\s]*(?:pass|pwd|secret|token|key|auth|sig|credential)[^=&#\s]*=)"
    r"(?P<secret>[^&;#\s]*)",
    re.IGNORECASE,
)


def mask_url(text: str) -> str:
    """`text` (a URL, or a message that contains URLs) with every URL password and every
    credential-looking query value replaced by `***`. Text without either comes back unchanged."""
    masked = _USERINFO.sub(lambda m: m["head"] + (MASK if m["secret"] else "") + "@", text)
    return _QUERY.sub(lambda m: m["head"] + (MASK if m["secret"] else ""), masked)


def has_credentials(url: str) -> bool:
    """Whether `url` carries a password or a credential-looking query value."""
    return mask_url(url) != url


def remember_secret(value: str | None) -> None:
    """Mask `value` from now on, in this process, wherever `mask_secrets` runs."""
    global _known_pattern
    if not value or len(value) < REMEMBER_MIN_CHARS or value in _KNOWN:
        return
    with _KNOWN_LOCK:
        _KNOWN.add(value)
        # Longest first, so a secret that contains another is masked whole.
        ordered = sorted(_KNOWN, key=len, reverse=True)
        _known_pattern = re.compile("|".join(re.escape(v) for v in ordered))
    _install_log_masking()


def remember_url_password(url: str | None) -> None:
    """Remember the password of a database or broker URL, if it has one."""
    if not url:
        return
    try:
        password = urlsplit(url).password
    except ValueError:  # not a URL urllib reads; mask_url still masks what looks like one
        return
    remember_secret(password)


def mask_known(text: str) -> str:
    """`text` with every remembered secret replaced by `***`: what the store writes (a tool
    result's own URLs are the server's words and stay as they came)."""
    pattern = _known_pattern
    return text if pattern is None else pattern.sub(MASK, text)


def mask_secrets(text: str) -> str:
    """`text` with every remembered secret and every URL credential replaced by `***`: what is
    logged or shown."""
    return mask_url(mask_known(text))


def forget_secrets() -> None:
    """Forget every remembered secret (tests)."""
    global _known_pattern
    with _KNOWN_LOCK:
        _KNOWN.clear()
        _known_pattern = None


_FACTORY: list[object] = []


def _install_log_masking() -> None:
    """Mask remembered secrets in every log record from now on, message and traceback alike,
    whichever handler writes it."""
    if _FACTORY:
        return
    make = logging.getLogRecordFactory()
    formatter = logging.Formatter()

    def masked_record(*args: object, **kwargs: object) -> logging.LogRecord:
        record = make(*args, **kwargs)
        if _known_pattern is None:
            return record
        try:
            record.msg, record.args = mask_known(record.getMessage()), ()
        except (TypeError, ValueError):  # a malformed call: leave it to logging's own report
            return record
        if record.exc_info and not record.exc_text:
            record.exc_text = mask_known(formatter.formatException(record.exc_info))
        return record

    _FACTORY.append(masked_record)
    logging.setLogRecordFactory(masked_record)
