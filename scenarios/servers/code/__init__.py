"""Fixture servers over a pinned code repository: plain-text search and a symbol index."""
