"""The drift guard: `farm anchors lock` / `verify` on a copy of the code anchors."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import text
from typer.testing import CliRunner

from mcp_farm.scenarios import anchors as anchors_module
from mcp_farm.scenarios import catalog
from mcp_farm.scenarios.anchors import (
    ANCHORS_DIR,
    THRESHOLD,
    load_anchors,
    lock_problems,
    read_lock,
    shown_folder,
)
from mcp_farm.scheduler.cli.anchors import judge_settings
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.scorecard.queries.answers import anchor_check, record_anchor_check
from mcp_farm.schema import digest
from mcp_farm.schema.db import init_db, make_engine
from tests.forkrun import farm_cli

RUBRIC = "code-answer"
SCENARIO = "code.callers.get-comma-header"
"""The scenario of anchor-2, whose answer spec the suite tests edit."""


@pytest.fixture
def anchors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the anchors and of the rubrics folder, so a test may tamper."""
    rubrics = tmp_path / "rubrics"
    shutil.copytree(catalog.RUBRICS_DIR, rubrics)
    monkeypatch.setattr(catalog, "RUBRICS_DIR", rubrics)
    folder = tmp_path / "anchors"
    shutil.copytree(ANCHORS_DIR / "code", folder)
    (folder / "anchors.lock").unlink(missing_ok=True)
    return folder


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the code suite, the one the anchors' scenarios come from."""
    suites = tmp_path / "suites"
    suites.mkdir()
    shutil.copy(catalog.SUITES_DIR / "code.yaml", suites / "code.yaml")
    monkeypatch.setattr(catalog, "SUITES_DIR", suites)
    return suites / "code.yaml"


def edit_answer(suite: Path, line: str, change: Any) -> None:
    """Rewrite the first line from SCENARIO's `id:` on that starts with `line` (stripped)."""
    lines = suite.read_text(encoding="utf-8").splitlines(keepends=True)
    start = lines.index(f"  - id: {SCENARIO}\n")
    at = next(i for i in range(start, len(lines)) if lines[i].strip().startswith(line))
    lines[at] = change(lines[at])
    before = suite.stat().st_mtime_ns
    suite.write_text("".join(lines), encoding="utf-8")
    # Suites are cached by modification time; a write within the clock's tick would not show.
    os.utime(suite, ns=(before, before + 1_000_000_000))


def judge_sweep(path: Path, folder: Path, scores: dict[str, dict[str, float]]) -> Path:
    """A sweep file whose scripted judge gives `scores` to each anchor (matched by its text)."""
    found = load_anchors(folder)
    script = [
        {"match": a.answer[:60], "scores": scores[a.id], "why": "scripted"} for a in found.anchors
    ]
    sweep: dict[str, Any] = {
        "name": "judge",
        "models": [{"id": "m", "adapter": "scripted", "model": "m", "script": []}],
        "prompts": ["code"],
        "judge": {
            "model": {"id": "judge", "adapter": "scripted", "model": "j", "script": script},
            "runs": 2,
        },
    }
    path.write_text(yaml.safe_dump(sweep), encoding="utf-8")
    return path


def verify(folder: Path, sweep: Path, db: str) -> Any:
    args = ["anchors", "verify", str(folder), "--judge-from", str(sweep), "--db", db]
    return CliRunner().invoke(app, args, env={"COLUMNS": "400"})  # a long temporary path, unfolded


def lock(folder: Path) -> None:
    result = CliRunner().invoke(app, ["anchors", "lock", str(folder)])
    assert result.exit_code == 0, result.output


def gold(folder: Path) -> dict[str, dict[str, float]]:
    return load_anchors(folder).gold


def test_a_faithful_judge_passes_and_the_pass_is_recorded(anchors: Path, tmp_path: Path) -> None:
    lock(anchors)
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    assert result.exit_code == 0, result.output
    assert "anchor gate passed" in result.output and "ρ = 1.000" in result.output
    with make_engine(db).connect() as conn:
        row = conn.execute(text("select passed, rho, rubric_id from anchor_check")).one()
    assert row.passed and row.rho == pytest.approx(1.0) and row.rubric_id == RUBRIC


def test_the_stored_gate_result_names_the_folder_the_lock_and_the_threshold(
    anchors: Path, tmp_path: Path
) -> None:
    lock(anchors)
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    assert result.exit_code == 0, result.output
    sha = hashlib.sha256((anchors / "anchors.lock").read_bytes()).hexdigest()
    with make_engine(db).connect() as conn:
        row = conn.execute(text("select folder, lock_sha256, threshold from anchor_check")).one()
    assert (row.folder, row.lock_sha256, row.threshold) == (str(anchors.resolve()), sha, 0.85)
    said = " ".join(result.output.split())
    assert f"(ρ ≥ 0.85; anchors {anchors.resolve()}, lock {sha[:12]})" in said
    # The bundled folder is named as the repository does.
    assert shown_folder(ANCHORS_DIR / "code") == "scenarios/anchors/code"


def test_a_threshold_below_the_seeds_needs_a_flag_and_is_shown_lowered(
    anchors: Path, tmp_path: Path
) -> None:
    # The real entry point: one line naming the flag, exit 2, and no lock written.
    refused = farm_cli(
        ["anchors", "lock", str(anchors), "--threshold", "0.5"],
        timeout=120,
        env=os.environ | {"COLUMNS": "400"},
    )
    assert refused.returncode == 2, refused.stderr
    assert "--allow-lower-threshold" in refused.stderr and "Traceback" not in refused.stderr
    assert not (anchors / "anchors.lock").exists()
    args = ["anchors", "lock", str(anchors), "--threshold", "0.5", "--allow-lower-threshold"]
    locked = CliRunner().invoke(app, args)
    assert locked.exit_code == 0, locked.output
    assert "lowered below the seed's 0.85" in locked.output
    assert read_lock(anchors) is not None and read_lock(anchors)["lowered"] is True  # type: ignore[index]
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    assert result.exit_code == 0, result.output
    assert "ρ ≥ 0.5, LOWERED below 0.85" in " ".join(result.output.split())


def test_a_lock_below_the_seeds_threshold_that_does_not_say_so_fails(
    anchors: Path, tmp_path: Path
) -> None:
    # A lock sealed with a low threshold but no mark that it was lowered on purpose (as an
    # older farm wrote them): the gate fails before judging, naming the threshold.
    lock(anchors)
    content = json.loads((anchors / "anchors.lock").read_text(encoding="utf-8"))
    content["threshold"] = 0.3
    content["seal"] = anchors_module._seal(content)
    (anchors / "anchors.lock").write_text(json.dumps(content), encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    assert result.exit_code == 1
    said = " ".join(result.output.split())
    assert "sets threshold 0.3, below the seed's 0.85" in said
    assert "was edited" not in said


def test_a_second_anchor_folder_cannot_turn_a_failed_gate_into_verified(
    anchors: Path, tmp_path: Path
) -> None:
    # One judge, one rubric. It fails on the anchors; a copy whose gold scores are the judge's
    # own passes. The failure on the first folder still decides, and names that folder.
    scores = gold(anchors)
    first = sorted(scores)[0]
    bent = scores | {first: {c: 4.0 - v for c, v in scores[first].items()}}
    easy = tmp_path / "easy"
    shutil.copytree(anchors, easy)
    gold_file = yaml.safe_load((easy / "gold.yaml").read_text(encoding="utf-8"))
    gold_file["anchors"] = bent
    (easy / "gold.yaml").write_text(yaml.safe_dump(gold_file), encoding="utf-8")
    lock(anchors)
    lock(easy)
    sweep = judge_sweep(tmp_path / "j.yaml", anchors, bent)
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    assert verify(anchors, sweep, db).exit_code == 1
    assert verify(easy, sweep, db).exit_code == 0
    judge = judge_settings(sweep)
    assert judge.model is not None
    rubric = load_anchors(anchors).rubric_hash
    with make_engine(db).connect() as conn:
        check = anchor_check(conn, judge.model.key(), rubric)
    assert check is not None and not check.passed
    assert check.folder == str(anchors.resolve())
    # Once the first folder passes again (here: the judge is fixed), the judge is verified.
    fixed = judge_sweep(tmp_path / "fixed.yaml", anchors, scores)
    assert verify(anchors, fixed, db).exit_code == 0


def test_shuffled_scores_fall_below_the_threshold(anchors: Path, tmp_path: Path) -> None:
    lock(anchors)
    scores = gold(anchors)
    shuffled = {
        "anchor-1": scores["anchor-3"],
        "anchor-3": scores["anchor-1"],
        "anchor-2": scores["anchor-4"],
        "anchor-4": scores["anchor-2"],
    }
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, shuffled), db)
    assert result.exit_code == 1
    assert "Spearman" in result.output and "below 0.85" in result.output


def test_a_noisy_judge_fails_the_gate(anchors: Path, tmp_path: Path) -> None:
    lock(anchors)
    rng = random.Random(3)
    noisy = {a: {c: float(rng.randint(0, 4)) for c in s} for a, s in gold(anchors).items()}
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, noisy), db)
    assert result.exit_code == 1 and "Spearman" in result.output


def test_one_changed_rubric_byte_fails_on_the_hash_before_judging(
    anchors: Path, tmp_path: Path
) -> None:
    lock(anchors)
    rubric = catalog.RUBRICS_DIR / f"{RUBRIC}.yaml"
    rubric.write_bytes(rubric.read_bytes().replace(b"0 (absent", b"0 (Absent", 1))
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    assert result.exit_code == 1
    assert f"rubric {RUBRIC} changed" in result.output
    assert "ρ =" not in result.output  # refused before any judging


def test_a_changed_transcript_or_gold_file_is_named(anchors: Path, tmp_path: Path) -> None:
    lock(anchors)
    path = anchors / "anchor-2.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(data | {"answer": data["answer"] + " "}), encoding="utf-8")
    with (anchors / "gold.yaml").open("a", encoding="utf-8") as f:
        f.write("# edited\n")
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    assert result.exit_code == 1
    assert "anchor-2.json changed" in result.output and "gold scores" in result.output


def test_verify_without_a_lock_says_to_lock_first(anchors: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    assert result.exit_code == 1 and "farm anchors lock" in result.output


def _edit_lock(folder: Path, change: Any) -> None:
    path = folder / "anchors.lock"
    path.write_text(json.dumps(change(json.loads(path.read_text(encoding="utf-8")))))


@pytest.mark.parametrize(("threshold", "passes"), [(0.99, False), (0.5, True)])
def test_the_locked_threshold_is_the_gate(
    anchors: Path, tmp_path: Path, threshold: float, passes: bool
) -> None:
    # Scores that agree well but not perfectly with the gold ones: ρ between 0.5 and 0.99.
    scores = gold(anchors)
    first = sorted(scores)[0]
    bent = scores | {first: {c: max(0.0, v - 2) for c, v in scores[first].items()}}
    flag = ["--allow-lower-threshold"] if threshold < THRESHOLD else []
    result = CliRunner().invoke(
        app, ["anchors", "lock", str(anchors), "--threshold", str(threshold), *flag]
    )
    assert result.exit_code == 0 and f"ρ ≥ {threshold:g}" in result.output
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, bent), db)
    assert (result.exit_code == 0) == passes, result.output
    assert ("below 0.99" in result.output) == (not passes)


def test_a_threshold_edited_in_the_lock_is_caught_as_an_edited_lock(
    anchors: Path, tmp_path: Path
) -> None:
    lock(anchors)
    _edit_lock(anchors, lambda lock: lock | {"threshold": 0.1})
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    assert result.exit_code == 1
    assert "anchors.lock was edited after `farm anchors lock` wrote it" in result.output
    assert "ρ =" not in result.output


def test_an_id_or_hash_edited_in_the_lock_is_the_locks_change_not_the_files(
    anchors: Path, tmp_path: Path
) -> None:
    lock(anchors)

    def edit(lock: dict[str, Any]) -> dict[str, Any]:
        sha = lock["rubric"]["sha256"]
        lock["rubric"]["sha256"] = sha[:20] + ("0" if sha[20] != "0" else "1") + sha[21:]
        lock["transcripts"]["anchor-3.json"] = "0" * 64
        # An id edited in the lock: anchor-2.json is locked under another name.
        lock["transcripts"]["anchor-9.json"] = lock["transcripts"].pop("anchor-2.json")
        return lock

    _edit_lock(anchors, edit)
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    out = " ".join(result.output.split())
    assert result.exit_code == 1
    assert "anchors.lock was edited" in out
    assert "anchor-3.json differs from the lock" in out and "changed since" not in out
    assert (
        "anchors.lock names anchor-9.json, which is not on disk, and does not name "
        "anchor-2.json, which is: the lock was edited or the files renamed (anchor-2.json has "
        "the hash locked for anchor-9.json)"
    ) in out
    # The transcripts are as they were: nothing blames them as added or removed.
    assert " added" not in out and " removed" not in out
    # The two rubric hashes are shown up to where they differ, never alike.
    shown = re.search(r"sha256 (\w+) ≠ locked (\w+)", out)
    assert shown is not None and shown.group(1) != shown.group(2)


def test_files_renamed_added_or_removed_under_an_intact_lock_are_the_files_change(
    anchors: Path, tmp_path: Path
) -> None:
    lock(anchors)
    (anchors / "anchor-2.json").rename(anchors / "anchor-9.json")
    (anchors / "anchor-4.json").unlink()
    shutil.copy(anchors / "anchor-1.json", anchors / "anchor-5.json")
    (anchors / "anchor-5.json").write_text(
        (anchors / "anchor-1.json").read_text(encoding="utf-8") + "\n", encoding="utf-8"
    )
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    out = " ".join(result.output.split())
    assert result.exit_code == 1
    assert "anchor transcript anchor-2.json renamed anchor-9.json since the lock" in out
    assert "anchor transcript anchor-4.json removed since the lock" in out
    assert "anchor transcript anchor-5.json added since the lock" in out
    assert "anchors.lock" not in out and "anchor-9.json added" not in out


def test_a_locked_hash_differing_only_in_case_or_spaces_is_the_same_hash(
    anchors: Path, tmp_path: Path
) -> None:
    lock(anchors)

    def edit(lock: dict[str, Any]) -> dict[str, Any]:
        lock["rubric"]["sha256"] = lock["rubric"]["sha256"].upper()
        lock["transcripts"]["anchor-2.json"] = f" {lock['transcripts']['anchor-2.json']}\n"
        lock["gold"] = lock["gold"].upper() + " "
        return lock

    _edit_lock(anchors, edit)
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    out = " ".join(result.output.split())
    # The lock was edited (its seal says so), but no entry is shown as a mismatch.
    assert result.exit_code == 1 and "anchors.lock was edited" in out
    assert "≠" not in out and "differs" not in out and "gold scores" not in out


def test_a_look_alike_character_in_a_locked_hash_is_shown_escaped(
    anchors: Path, tmp_path: Path
) -> None:
    lock(anchors)
    cyrillic = {"a": "\u0430", "c": "\u0441", "e": "\u0435"}

    def edit(lock: dict[str, Any]) -> dict[str, Any]:
        sha = lock["rubric"]["sha256"]
        at = next(i for i, ch in enumerate(sha) if ch in cyrillic)
        lock["rubric"]["sha256"] = sha[:at] + cyrillic[sha[at]] + sha[at + 1 :]
        return lock

    _edit_lock(anchors, edit)
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    out = " ".join(result.output.split())
    shown = re.search(r"sha256 (\S+) ≠ locked (\S+)", out)
    assert shown is not None, out
    assert shown.group(2).isascii() and "\\u04" in shown.group(2)
    assert shown.group(1) != shown.group(2)


def test_verify_reports_the_lock_before_asking_the_endpoint(anchors: Path, tmp_path: Path) -> None:
    from mcp_farm.scenarios import ScenarioError
    from tests.helpers import free_port

    sweep = judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors))
    # Nothing listens here: asking it would stop verify with "nothing answers".
    args = ["--endpoint", f"http://127.0.0.1:{free_port()}/v1", "--endpoint-model", "judge"]
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"

    def run() -> Any:
        command = ["anchors", "verify", str(anchors), "--judge-from", str(sweep), "--db", db]
        return CliRunner().invoke(app, [*command, *args])

    # No lock: said to lock first.
    result = run()
    assert result.exit_code == 1 and "farm anchors lock" in result.output
    # A lock that does not match: named, and the gate fails.
    lock(anchors)
    _edit_lock(anchors, lambda lock: lock | {"threshold": 0.5})
    result = run()
    assert result.exit_code == 1 and "anchors.lock was edited" in result.output
    assert "nothing answers" not in result.output
    # A lock that cannot be read: its one-line error, not the endpoint's.
    (anchors / "anchors.lock").write_text("[]", encoding="utf-8")
    result = run()
    assert isinstance(result.exception, ScenarioError), result.output
    assert "anchors.lock" in str(result.exception)


@pytest.mark.parametrize("content", ["[]", '{"rubric": ', "", "42"])
def test_a_lock_that_is_not_a_json_object_is_one_line_and_exit_2(
    anchors: Path, tmp_path: Path, content: str
) -> None:
    (anchors / "anchors.lock").write_text(content, encoding="utf-8")
    sweep = judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors))
    # The real entry point, which turns a deliberate error into one line and exit 2.
    done = farm_cli(
        [
            "anchors",
            "verify",
            str(anchors),
            "--judge-from",
            str(sweep),
            "--db",
            f"sqlite:///{tmp_path}/f.db",
        ],
        timeout=120,
        env=os.environ | {"COLUMNS": "400"},  # a long temporary path, on one line
    )
    assert done.returncode == 2, done.stderr
    said = done.stderr.strip()
    assert "anchors.lock" in said and "re-lock" in said and "Traceback" not in said
    assert len(said.splitlines()) == 1


def test_the_bundled_lock_matches_the_bundled_anchors_and_their_scenarios() -> None:
    anchors = load_anchors(ANCHORS_DIR / "code")
    assert lock_problems(anchors) == []
    locked = read_lock(anchors.folder)
    assert locked is not None and locked["threshold"] == THRESHOLD
    assert set(locked["shown"]) == {a.id for a in anchors.anchors}


@pytest.mark.parametrize(
    ("line", "change", "named"),
    [
        ("Five functions:", lambda line: line.replace("Five", "Four", 1), "reference answer"),
        ("keywords:", lambda line: line.replace('"_keep_alive", ', "", 1), "expected terms"),
    ],
    ids=["reference", "term"],
)
def test_an_edited_reference_answer_or_term_of_an_anchors_scenario_is_named_before_judging(
    anchors: Path, suite: Path, tmp_path: Path, line: str, change: Any, named: str
) -> None:
    lock(anchors)
    edit_answer(suite, line, change)
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    out = " ".join(result.output.split())
    assert result.exit_code == 1
    said = (
        f"scenario {SCENARIO}'s {named} changed since the lock (shown to the judge with anchor-2)"
    )
    assert said in out
    # One line, for that scenario only; nothing else is blamed, and nothing was judged.
    assert out.count("✗") == 1 and "ρ =" not in out


def test_relocking_accepts_an_edited_reference_answer(
    anchors: Path, suite: Path, tmp_path: Path
) -> None:
    lock(anchors)
    edit_answer(suite, "Five functions:", lambda line: line.replace("Five", "Four", 1))
    assert lock_problems(load_anchors(anchors))
    lock(anchors)
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    assert result.exit_code == 0, result.output
    assert "anchor gate passed" in result.output


def test_a_lock_that_seals_nothing_of_the_scenarios_says_to_relock(
    anchors: Path, tmp_path: Path
) -> None:
    lock(anchors)

    def older(lock: dict[str, Any]) -> dict[str, Any]:
        # A lock as an older farm wrote it: no `shown`, and a seal over what it has.
        body = {k: v for k, v in lock.items() if k not in ("shown", "seal")}
        return body | {"seal": digest(body)}

    _edit_lock(anchors, older)
    db = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    result = verify(anchors, judge_sweep(tmp_path / "j.yaml", anchors, gold(anchors)), db)
    out = " ".join(result.output.split())
    assert result.exit_code == 1 and "was edited" not in out
    assert "anchors.lock seals nothing of what the judge is shown" in out and "re-lock" in out


def test_a_check_stored_before_folders_were_recorded_yields_to_the_first_that_names_one(
    tmp_path: Path,
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)

    def record(passed: bool, folder: str) -> None:
        record_anchor_check(
            engine,
            judge_key="k",
            judge_model="j",
            rubric_id=RUBRIC,
            rubric_hash="h",
            rho=0.9 if passed else 0.2,
            passed=passed,
            detail="",
            folder=folder,
        )

    def deciding() -> Any:
        with engine.connect() as conn:
            return anchor_check(conn, "k", "h")

    record(False, "")  # as an upgraded database holds it: no folder
    assert not deciding().passed
    record(True, "scenarios/anchors/code")
    assert deciding().passed and deciding().folder == "scenarios/anchors/code"
    record(False, "scenarios/anchors/code")
    record(True, "elsewhere")
    assert not deciding().passed and deciding().folder == "scenarios/anchors/code"
