"""The one masking helper: URL passwords and credential-looking query values never shown."""

from __future__ import annotations

import pytest

from mcp_farm.schema import (
    has_credentials,
    mask_url,
)


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        (
            "postgresql+psycopg://farm:s3cret@head:5432/farm",
            "postgresql+psycopg://farm:***@head:5432/farm",
        ),
        ("redis://:s3cret@head:6379/0", "redis://:***@head:6379/0"),
        (
            "rediss://default:p%40ss@cache.example:6380/1",
            "rediss://default:***@cache.example:6380/1",
        ),
        # SQLAlchemy reads a raw `@` or `/` inside the password up to the host's `@`.
        ("postgresql://u:pa/ss@word@db/x", "postgresql://u:***@db/x"),
        ("http://127.0.0.1:8080/v1?api_key=sk-123&x=1", "http://127.0.0.1:8080/v1?api_key=***&x=1"),
        ("postgresql://u@db/x?password=hunter2", "postgresql://u@db/x?password=***"),
        ("https://host/v1?sig=abc;token=def", "https://host/v1?sig=***;token=***"),
    ],
)
def test_passwords_and_secret_query_values_are_masked(url: str, masked: str) -> None:
    assert mask_url(url) == masked
    assert has_credentials(url)


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:////tmp/farm-data/farm.sqlite",
        "postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
        "redis://127.0.0.1:6379/0",
        "http://127.0.0.1:8080/v1",
        "http://host:8080/v1?api-version=2024-06-01",
        "",
    ],
)
def test_urls_without_credentials_come_back_unchanged(url: str) -> None:
    assert mask_url(url) == url
    assert not has_credentials(url)


def test_every_url_inside_a_message_is_masked() -> None:
    message = (
        "cannot reach postgresql://farm:pw1@db:5432/farm, nor redis://:pw2@head:6379/0; "
        "see http://head:5555 (user me@example.org)"
    )
    shown = mask_url(message)
    assert "pw1" not in shown and "pw2" not in shown
    assert "postgresql://farm:***@db:5432/farm," in shown and "redis://:***@head:6379/0;" in shown
    assert "http://head:5555 (user me@example.org)" in shown


def test_an_empty_password_is_left_as_it_is() -> None:
    assert mask_url("redis://:@head:6379/0") == "redis://:@head:6379/0"
