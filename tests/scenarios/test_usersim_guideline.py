"""The simulated user's guideline is versioned by file: a shipped version's text never changes,
so every trial that records `guideline: v1` met the same rules."""

from __future__ import annotations

import hashlib
from pathlib import Path

from mcp_farm.scenarios import usersim

GUIDELINE_V1_SHA256 = "cbde52805c3e730c6a4091e2f41ea8a8185e38f6cb073ddc8d1e29066c2afe3e"


def test_the_shipped_guideline_v1_is_byte_for_byte_the_one_trials_recorded() -> None:
    path = Path(usersim.__file__).parent / "guideline_v1.md"
    found = hashlib.sha256(path.read_bytes()).hexdigest()
    assert found == GUIDELINE_V1_SHA256, (
        "scenarios/usersim/guideline_v1.md changed: a change to the guideline needs a new "
        "version file (guideline_v2.md, and GUIDELINE_VERSION = 'v2'), not an edit, since "
        "trials already recorded under v1 met the old text"
    )
