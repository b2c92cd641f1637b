"""`farm scenarios validate` reports every problem at once; `farm scenarios list` counts tiers."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.forkrun import farm_cli

BAD = """
suite: broken
scenarios:
  - id: a
    version: 1
    tier: simple
    prompt: hi
    servers: [nope]
    expect: [{tool: t, params: {p: {derived_from_step: 1}}}]
    final_answer: "x"
    example_answer: "y"
  - id: a
    version: 1
    tier: simple
    prompt: hi
    paraphrases: [Hi]
    servers: [gaia]
"""


def farm(*args: str) -> subprocess.CompletedProcess[str]:
    return farm_cli(args, timeout=120, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})


def test_validate_lists_every_problem_of_every_file_and_fails(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD)
    broken_yaml = tmp_path / "worse.yaml"
    broken_yaml.write_text("suite: [unclosed\n")
    result = farm("scenarios", "validate", str(bad), str(broken_yaml))
    assert result.returncode == 1
    out = result.stdout
    for expected in (
        "unknown server 'nope'",
        "the first step has no earlier result",
        "duplicate scenario id 'a'",
        "expect[0].example: missing",
        "does not match final_answer",
        "repeats the prompt",
        "invalid YAML",
    ):
        assert expected in out, out
    assert "7 problem(s) in 2 file(s)" in out


def test_the_bundled_suites_validate_and_list_with_their_tier_counts() -> None:
    # Without starting servers: test_validate_finds_everything starts them (the third-party
    # ones need .tools/).
    assert farm("scenarios", "validate", "--no-servers").returncode == 0
    listed = farm("scenarios", "list", "--tag", "third-party")
    assert listed.returncode == 0
    assert "ref.git.who-fixed-login" in listed.stdout
    assert "ref.git" in listed.stdout and "fs.list-desktop" not in listed.stdout
    everything = farm("scenarios", "list")
    assert "scenarios:" in everything.stdout and "simple" in everything.stdout
