"""`farm replay` compares whole results (past the part a model is shown, and the structured
content), applies a suite's ignore rules, lists tool-list changes, and serves CI: `--json` and
`--fail-on-change`. Every trial runs the orders test server over stdio."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import SpecError
from tests.scheduler.cli.test_replay import ORDERS, SCENARIO, SCRIPT, farm

STAMP_RULES = {"paths": ["$.checked_at"], "patterns": ["req-[0-9a-f]{8}"]}


def orders_suite(folder: Path, *args: str, ignore: dict[str, Any] | None = None) -> Path:
    """The orders scenario with its server started with `args`; `ignore:` at suite level."""
    path = folder / "orders.yaml"
    command = json.dumps(["{python}", str(ORDERS), *args])
    rules = f"ignore: {json.dumps(ignore)}\n" if ignore else ""
    path.write_text(f"suite: orders\n{rules}servers:\n  - name: orders\n    command: {command}\n")
    path.write_text(path.read_text() + SCENARIO)
    return path


def recorded(folder: Path, *args: str, ignore: dict[str, Any] | None = None) -> tuple[Path, str]:
    """The orders sweep run once against the server started with `args`."""
    data, sweep = folder / "data", folder / "sweep.yaml"
    spec = {
        "name": "orders",
        "models": [{"id": "ideal", "adapter": "scripted", "model": "x", "script": SCRIPT}],
        "prompts": ["native"],
        "scenarios": {"suites": [str(orders_suite(folder, *args, ignore=ignore))]},
        "repetitions": 1,
    }
    sweep.write_text(yaml.safe_dump(spec))
    ran = farm("run", str(sweep), data=data)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    with sqlite3.connect(data / "farm.sqlite") as db:
        [(sweep_id,)] = db.execute("select distinct sweep_id from trial").fetchall()
    return data, sweep_id


def test_a_change_past_the_shown_text_and_in_the_structured_part_is_found_and_shown(
    tmp_path: Path,
) -> None:
    data, sweep_id = recorded(tmp_path, "--tail", "first-ending")

    orders_suite(tmp_path, "--tail", "second-ending")  # changed 5,000 characters in
    changed = farm("replay", sweep_id, "--json", "--fail-on-change", data=data)
    assert changed.returncode == 1, changed.stdout + changed.stderr
    document = json.loads(changed.stdout)  # stdout is the JSON document alone
    assert (document["trials"], document["changed"], document["outcomes_changed"]) == (1, 1, 0)
    [trial] = document["changes"]
    assert (trial["model"], trial["scenario"], trial["before"], trial["after"]) == (
        "ideal",
        "orders.cancel",
        "pass",
        "pass",
    )
    [call] = trial["calls"]
    assert (call["index"], call["tool"], call["kind"]) == (0, "get_order", "result changed")
    diff = "\n".join(call["diff"])
    assert 'first-ending"' in diff and 'second-ending"' in diff
    assert "changed: 1 trial(s)" in changed.stderr

    # The text as recorded; only the structured content and the tool list differ.
    orders_suite(
        tmp_path,
        *("--tail", "first-ending", "--note", "added later"),
        *("--describe", "Cancel an order; give a reason.", "--refunds"),
    )
    listed = farm("replay", sweep_id, "--rerun", data=data)
    assert listed.returncode == 0, listed.stdout + listed.stderr  # no --fail-on-change
    out = listed.stdout
    assert "call 1 get_order: structured content changed" in out
    assert '+  "note": "added later"' in out
    assert "call 1 get_order: result changed" not in out
    assert "tool orders.cancel_order: description changed" in out
    assert "tool orders.refund_order: new" in out
    assert "tool orders.get_order" not in out


def test_a_suites_ignore_rules_keep_timestamps_and_random_ids_out_of_the_diff(
    tmp_path: Path,
) -> None:
    data, sweep_id = recorded(tmp_path, "--stamp", ignore=STAMP_RULES)
    same = farm("replay", sweep_id, "--fail-on-change", data=data)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no change: all 1 trials answered as recorded" in same.stdout

    orders_suite(tmp_path, "--stamp")  # the rules taken away: every replay differs
    stamped = farm("replay", sweep_id, "--rerun", "--fail-on-change", data=data)
    assert stamped.returncode == 1, stamped.stdout + stamped.stderr
    assert "call 1 get_order: result changed" in stamped.stdout
    assert '-  "checked_at": "' in stamped.stdout and '+  "request": "req-' in stamped.stdout


@pytest.mark.parametrize(
    ("rules", "field", "problem"),
    [
        ({"paths": ["checked_at"]}, "ignore.paths[0]", "must start with `$`"),
        ({"paths": ["$.a", "$.b c"]}, "ignore.paths[1]", "cannot read ' c'"),
        ({"patterns": ["(a+)+"]}, "ignore.patterns[0]", "repeated group"),
        ({"path": ["$.a"]}, "ignore.path", ""),
    ],
)
def test_bad_ignore_rules_are_refused_naming_the_file_and_the_field(
    tmp_path: Path, rules: dict[str, Any], field: str, problem: str
) -> None:
    path = orders_suite(tmp_path, ignore=rules)
    with pytest.raises(SpecError) as caught:
        load_suite(str(path))
    message = str(caught.value)
    assert str(path) in message and field in message and problem in message
