"""State probes through `farm replay` and cassettes, end to end on real fixture servers (the
notes server and a SQLite ledger): each probe kind (read call, hidden snapshot, file, SQLite)
replays to the same verdict against today's servers; a server whose new version doubles a write
shows as a probe that now fails, even where the outcome (graded by calls) does not change; a
cassette, which keeps no state, is refused for every probe kind with the reason, before anything
runs; a probe that cannot look after the last turn is an infra_error, never a pass."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from mcp_farm.scenarios import ScenarioError, load_suite

ROOT = Path(__file__).resolve().parents[3]
LEDGER = ROOT / "tests" / "servers" / "ledger.py"
ONCE = {"regex": "(?s)(?!.*oat milk.*oat milk).*oat milk.*"}
"""Oat milk is on the groceries note exactly once."""
PROBES: dict[str, dict[str, object]] = {
    "read": {"tool": "read_note", "server": "notes", "arguments": {"note_id": "groceries"}},
    "snapshot": {"snapshot": True, "server": "notes", "at": "notes.groceries.body"},
    "file": {"file": "groceries.md", "server": "notes"},
    "sqlite": {
        "sqlite": "ledger.db",
        "server": "ledger",
        "query": "SELECT item, amount FROM expense ORDER BY rowid",
    },
}
EXPECTED: dict[str, object] = {
    "read": ONCE,
    "snapshot": ONCE,
    "file": ONCE,
    "sqlite": [["rent", 900.0], ["oat milk", 2.5]],
}
APPEND = {
    "call": {"name": "append_to_note", "arguments": {"note_id": "groceries", "text": "- oat milk"}}
}
EXPENSE = {"call": {"name": "add_expense", "arguments": {"item": "oat milk", "amount": 2.5}}}
SCRIPTS = {
    "ideal": [APPEND, EXPENSE, {"answer": "Added and written."}],
    "doubled": [APPEND, APPEND, EXPENSE, EXPENSE, {"answer": "Added and written."}],
}


def _scenario(kind: str, probe: dict[str, object], expect: object, **extra: object) -> dict:
    """One scenario of the suite: the same task and calls, one probe of the given kind."""
    return {
        "id": f"probed.{kind}",
        "version": 1,
        "tier": "simple",
        "prompt": "Put oat milk on my groceries note and write 2.50 for it in the ledger.",
        "servers": ["notes", "ledger"],
        "expect": [
            {
                "tool": "append_to_note",
                "params": {"note_id": "groceries", "text": {"regex": "(?s).*oat milk.*"}},
            },
            {"tool": "add_expense", "params": {"item": "oat milk", "amount": 2.5}},
        ],
        "final_answer": "added|written",
        "state": [{**probe, "expect": expect, "label": f"{kind} probe"}],
        **extra,
    }


def _servers(folder: Path, *, twice: bool = False) -> list[dict[str, object]]:
    notes = ["{python}", "-m", "mcp_farm.scenarios.servers.notes", "--root", "{sandbox}"]
    ledger = ["{python}", str(LEDGER), "--root", "{sandbox}", *(["--twice"] if twice else [])]
    return [
        {"name": "notes", "command": notes, "sandbox": "notes"},
        {"name": "ledger", "command": ledger, "sandbox": str(folder / "ledger")},
    ]


def write_suite(folder: Path, *, twice: bool = False) -> Path:
    """The live suite: a scenario per probe kind (SQLite's graded by calls, so a changed state
    need not change its outcome), and one whose read call the notes server refuses."""
    scenarios = [
        _scenario(
            kind, probe, EXPECTED[kind], **({"grade_by": "calls"} if kind == "sqlite" else {})
        )
        for kind, probe in PROBES.items()
    ]
    missing = {**PROBES["read"], "arguments": {"note_id": "no-such-note"}}
    scenarios.append(_scenario("unreadable", missing, ONCE))
    path = folder / "probed.yaml"
    suite = {"suite": "probed", "servers": _servers(folder, twice=twice), "scenarios": scenarios}
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def farm(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    """The command line, importing this checkout's code."""
    env = {
        "COLUMNS": "200",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        [sys.executable, "-m", "mcp_farm.scheduler.cli.app", *args, "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


@dataclass(frozen=True)
class Recorded:
    folder: Path
    data: Path
    suite: Path
    tapes: Path
    sweep_id: str

    def trials(self, sweep_id: str) -> dict[tuple[str, str], tuple[str, str, str]]:
        """(model, scenario) → (outcome, detail, state_json) of one sweep's trials."""
        with sqlite3.connect(self.data / "farm.sqlite") as db:
            rows = db.execute(
                "select model_id, scenario_id, outcome, detail, state_json from trial "
                "where sweep_id = ?",
                (sweep_id,),
            ).fetchall()
        return {(m, s): (o, d, j) for m, s, o, d, j in rows}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    folder = tmp_path_factory.mktemp("probes")
    (folder / "ledger").mkdir()
    with sqlite3.connect(folder / "ledger" / "ledger.db") as db:
        db.execute("create table expense (item text not null, amount real not null)")
        db.execute("insert into expense values ('rent', 900)")
    db.close()
    suite = write_suite(folder)
    sweep = folder / "record.yaml"
    models = [
        {"id": m, "adapter": "scripted", "model": "x", "script": s} for m, s in SCRIPTS.items()
    ]
    spec = {"name": "record", "models": models, "prompts": ["native"], "repetitions": 1}
    sweep.write_text(yaml.safe_dump({**spec, "scenarios": {"suites": [str(suite)]}}))
    data, tapes = folder / "data", folder / "tapes"
    run = farm("run", str(sweep), "--capture", str(tapes), data=data)
    assert run.returncode == 0, run.stdout + run.stderr
    with sqlite3.connect(data / "farm.sqlite") as db:
        (sweep_id,) = db.execute("select sweep_id from sweep").fetchone()
    db.close()
    yield Recorded(folder, data, suite, tapes, sweep_id)


def test_each_probe_kind_grades_the_recording_by_its_state(recorded: Recorded) -> None:
    found = recorded.trials(recorded.sweep_id)
    for kind in ("read", "snapshot", "file"):
        assert found[("ideal", f"probed.{kind}")][0] == "pass", found[("ideal", f"probed.{kind}")]
        assert found[("doubled", f"probed.{kind}")][0] == "wrong_state"
    # Graded by calls, a doubled expense passes; its probe saw it all the same.
    assert found[("ideal", "probed.sqlite")][0] == "pass"
    doubled = found[("doubled", "probed.sqlite")]
    assert doubled[0] == "pass" and json.loads(doubled[2])["passed"] is False


def test_a_probe_that_cannot_look_after_the_last_turn_is_an_infra_error_not_a_pass(
    recorded: Recorded,
) -> None:
    for model in SCRIPTS:
        outcome, detail, state = recorded.trials(recorded.sweep_id)[(model, "probed.unreadable")]
        assert outcome == "infra_error", detail
        assert "state probe unreadable probe: notes.read_note failed" in detail
        assert state == ""


def test_a_cassette_records_neither_control_tools_nor_probes_reads(recorded: Recorded) -> None:
    for server, tool in (("notes", "append_to_note"), ("ledger", "add_expense")):
        tape = yaml.safe_load((recorded.tapes / f"{server}.yaml").read_text())
        assert [c["tool"] for c in tape["calls"]] == [tool], tape["calls"]
        assert not [t for t in tape["tools"] if t["name"].startswith("farm_")]


def test_farm_replay_runs_every_probe_again_to_the_same_verdict_and_lists_a_changed_state(
    recorded: Recorded,
) -> None:
    same = farm("replay", recorded.sweep_id, data=recorded.data)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no change: all 10 trials answered as recorded" in same.stdout
    replay_id = re.search(r"farm compare \S+ (\S+)", same.stdout)
    assert replay_id, same.stdout
    before, after = recorded.trials(recorded.sweep_id), recorded.trials(replay_id.group(1))
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in before.items()}
    for key, (_, _, state) in before.items():
        if state:
            found = [p["found"] for p in json.loads(after[key][2])["probes"]]
            assert found == [p["found"] for p in json.loads(state)["probes"]], key

    write_suite(recorded.folder, twice=True)  # the ledger server's next version
    try:
        changed = farm("replay", recorded.sweep_id, "--rerun", "--json", data=recorded.data)
    finally:
        write_suite(recorded.folder)
    assert changed.returncode == 0, changed.stdout + changed.stderr
    document = json.loads(changed.stdout)
    by = {(c["model"], c["scenario"]): c for c in document["changes"]}
    assert set(by) == {("ideal", "probed.sqlite"), ("doubled", "probed.sqlite")}
    ideal = by[("ideal", "probed.sqlite")]
    # Graded by calls, the outcome stands: only the probe says the state changed.
    assert (ideal["before"], ideal["after"], ideal["calls"]) == ("pass", "pass", [])
    # Listed once: the verdict that changed, with the diff of the value found.
    kinds = [(p["label"], p["kind"]) for p in ideal["probes"]]
    assert kinds == [("sqlite probe", "now fails")]
    assert any('"oat milk"' in line and line.startswith("+") for line in ideal["probes"][0]["diff"])
    doubled = by[("doubled", "probed.sqlite")]
    assert [p["kind"] for p in doubled["probes"]] == ["found changed"]


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("read", "keeps no state"),
        ("snapshot", "holds no hidden snapshot"),
        ("file", "answers the calls it holds from the recording"),
        ("sqlite", "answers the calls it holds from the recording"),
    ],
)
def test_a_probe_of_a_server_served_from_its_cassette_is_refused_with_the_reason(
    recorded: Recorded, kind: str, reason: str
) -> None:
    played = recorded.folder / f"played-{kind}.yaml"
    servers = [
        {"name": name, "replay": str(recorded.tapes / f"{name}.yaml")}
        for name in ("notes", "ledger")
    ]
    scenario = _scenario(kind, PROBES[kind], EXPECTED[kind])
    played.write_text(
        yaml.safe_dump({"suite": f"played-{kind}", "servers": servers, "scenarios": [scenario]})
    )
    with pytest.raises(ScenarioError) as refused:
        load_suite(str(played))
    said = str(refused.value)
    assert f"{played}: scenarios[0].state[0]: server " in said
    assert "is served from its cassette, which " + reason in said
    # The same suite without the probe plays from the cassettes, to the recorded verdict.
    scenario.pop("state")
    played.write_text(
        yaml.safe_dump({"suite": f"played-{kind}", "servers": servers, "scenarios": [scenario]})
    )
    assert [s.id for s in load_suite(str(played)).scenarios] == [f"probed.{kind}"]
