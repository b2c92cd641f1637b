"""Keeping credentials out of what the farm prints, logs and stores.

Database and broker URLs may carry a password (`postgresql+psycopg://farm:…@head/farm`,
`redis://:…@head:6379/0`) and some URLs carry a key in their query (`?api_key=…`). Anything that
shows such a URL to a person, a log or a table goes through `mask_url` first.
"""

from __future__ import annotations

import re

MASK = "***"

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
