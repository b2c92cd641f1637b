"""Schema versions: a database made by an earlier release is migrated, not recreated."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import inspect

from mcp_farm.schema import StoreError
from mcp_farm.schema.db import (
    SCHEMA_VERSION,
    init_db,
    make_engine,
    require_latest,
    schema_version,
)

# The tables as the first release created them (before the distributed mode).
VERSION_1 = """
CREATE TABLE sweep (sweep_id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL,
  spec_json VARCHAR NOT NULL, trial_count INTEGER NOT NULL, created_at DATETIME NOT NULL);
CREATE TABLE trial (trial_id VARCHAR PRIMARY KEY, sweep_id VARCHAR NOT NULL,
  model_id VARCHAR NOT NULL, prompt_id VARCHAR NOT NULL, scenario_id VARCHAR NOT NULL,
  scenario_version INTEGER NOT NULL, tier VARCHAR NOT NULL, expected_tools VARCHAR NOT NULL,
  repetition INTEGER NOT NULL, status VARCHAR NOT NULL, outcome VARCHAR, stop_reason VARCHAR,
  detail VARCHAR NOT NULL, latency_s FLOAT, first_token_s FLOAT, tokens_prompt INTEGER NOT NULL,
  tokens_completion INTEGER NOT NULL, turns INTEGER NOT NULL, final_answer VARCHAR,
  transcript_json VARCHAR NOT NULL, provenance_json VARCHAR NOT NULL, host VARCHAR,
  worker_tag VARCHAR, payload_json VARCHAR NOT NULL, started_at DATETIME, finished_at DATETIME);
CREATE TABLE tool_call (trial_id VARCHAR NOT NULL REFERENCES trial (trial_id), idx INTEGER NOT NULL,
  server VARCHAR, tool VARCHAR NOT NULL, arguments_json VARCHAR NOT NULL, ok BOOLEAN NOT NULL,
  error VARCHAR, result_digest VARCHAR NOT NULL, latency_s FLOAT NOT NULL,
  PRIMARY KEY (trial_id, idx));
INSERT INTO sweep VALUES ('old', 'old', '{}', 1, '2026-11-01 10:00:00');
INSERT INTO trial VALUES ('t1', 'old', 'm', 'p', 's', 1, 'simple', '[]', 0, 'done', 'pass',
  'answer', '', 1.5, NULL, 0, 0, 1, 'hi', '[]', '{}', 'h', 'cpu', '{}', NULL, NULL);
INSERT INTO tool_call VALUES ('t1', 0, 'fs', 'read_file', '{}', 1, NULL, '', 0.01);
"""


def columns(engine: object, table: str) -> set[str]:
    return {c["name"] for c in inspect(engine).get_columns(table)}  # type: ignore[arg-type]


def test_a_version_1_database_is_migrated_and_keeps_its_trials(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(VERSION_1)
    engine = make_engine(f"sqlite:///{path}")
    assert schema_version(engine) == 1
    with pytest.raises(StoreError, match="farm db init"):
        require_latest(engine, "sqlite:///old")

    init_db(engine)
    assert schema_version(engine) == SCHEMA_VERSION
    assert {"queue", "node", "attempts"} <= columns(engine, "trial")
    assert "status" in columns(engine, "sweep")
    with sqlite3.connect(path) as db:
        assert db.execute("select outcome, attempts, queue from trial").fetchall() == [
            ("pass", 0, "")
        ]
        assert db.execute("select status from sweep").fetchall() == [("active",)]
        # Calls recorded before they carried their trial's keys get them from the trial.
        assert db.execute(
            "select sweep_id, model_id, prompt_id, toolset from tool_call"
        ).fetchall() == [("old", "m", "p", "")]
    init_db(engine)  # running it again changes nothing
    assert schema_version(engine) == SCHEMA_VERSION


def test_a_new_database_gets_the_same_columns_as_a_migrated_one(tmp_path: Path) -> None:
    old = tmp_path / "old.sqlite"
    with sqlite3.connect(old) as db:
        db.executescript(VERSION_1)
    migrated, fresh = make_engine(f"sqlite:///{old}"), make_engine(f"sqlite:///{tmp_path / 'n.db'}")
    init_db(migrated)
    init_db(fresh)
    for table in ("sweep", "trial", "tool_call", "node", "scorecard"):
        assert columns(migrated, table) == columns(fresh, table), table
    require_latest(fresh, "sqlite:///new")


def test_a_version_10_database_keeps_its_gate_runs_and_gains_what_they_verified(
    tmp_path: Path,
) -> None:
    # A database as version 10 left it: anchor_check without folder, lock hash or threshold.
    path = tmp_path / "v10.sqlite"
    init_db(make_engine(f"sqlite:///{path}"))
    with sqlite3.connect(path) as db:
        for column in ("folder", "lock_sha256", "threshold"):
            db.execute(f"ALTER TABLE anchor_check DROP COLUMN {column}")
        db.execute("DELETE FROM schema_version WHERE version > 10")
        db.execute(
            "INSERT INTO anchor_check (judge_key, judge_model, rubric_id, rubric_hash, rho,"
            " passed, detail, checked_at) VALUES ('k', 'j', 'r', 'h', 0.9, 1, '',"
            " '2026-11-01 10:00:00')"
        )
    engine = make_engine(f"sqlite:///{path}")
    assert schema_version(engine) == 10
    init_db(engine)
    assert schema_version(engine) == SCHEMA_VERSION
    assert {"folder", "lock_sha256", "threshold"} <= columns(engine, "anchor_check")
    with sqlite3.connect(path) as db:
        row = db.execute("SELECT rho, folder, lock_sha256, threshold FROM anchor_check").fetchone()
    assert row == (0.9, "", "", None)


def indexes(engine: object, table: str) -> set[str]:
    return {i["name"] for i in inspect(engine).get_indexes(table)}  # type: ignore[arg-type]


def test_a_version_19_database_gains_the_index_of_the_newest_trials_first(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v19.sqlite"
    init_db(make_engine(f"sqlite:///{path}"))
    with sqlite3.connect(path) as db:
        db.execute("DROP INDEX ix_trial_browse_newest")
        db.execute("DELETE FROM schema_version WHERE version > 19")
    engine = make_engine(f"sqlite:///{path}")
    assert schema_version(engine) == 19
    assert "ix_trial_browse_newest" not in indexes(engine, "trial")
    init_db(engine)
    assert schema_version(engine) == SCHEMA_VERSION
    assert "ix_trial_browse_newest" in indexes(engine, "trial")


def test_a_version_22_database_gains_the_index_of_the_other_path_filter(tmp_path: Path) -> None:
    path = tmp_path / "v22.sqlite"
    init_db(make_engine(f"sqlite:///{path}"))
    with sqlite3.connect(path) as db:
        db.execute("DROP INDEX ix_trial_browse_other_path")
        db.execute("DELETE FROM schema_version WHERE version > 22")
    engine = make_engine(f"sqlite:///{path}")
    assert schema_version(engine) == 22
    init_db(engine)
    assert schema_version(engine) == SCHEMA_VERSION
    with sqlite3.connect(path) as db:
        (sql,) = db.execute(
            "select sql from sqlite_master where name = 'ix_trial_browse_other_path'"
        ).fetchone()
    # The filter's column after the sweep, then scenario order, as the table declares it.
    assert "(sweep_id, other_path, model_id, prompt_id, toolset, scenario_id," in sql


def test_a_version_24_database_keeps_its_token_counts_as_measured(tmp_path: Path) -> None:
    path = tmp_path / "v24.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(VERSION_1)
    init_db(make_engine(f"sqlite:///{path}"))
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE trial DROP COLUMN tokens_measured")
        db.execute("UPDATE trial SET tokens_prompt = 120, tokens_completion = 7")
        db.execute("DELETE FROM schema_version WHERE version > 24")
    engine = make_engine(f"sqlite:///{path}")
    assert schema_version(engine) == 24
    init_db(engine)
    assert schema_version(engine) == SCHEMA_VERSION
    with sqlite3.connect(path) as db:
        row = db.execute("select tokens_prompt, tokens_completion, tokens_measured from trial")
        assert row.fetchall() == [(120, 7, 1)]


def test_a_version_26_database_keeps_its_answer_scores_reasoning_tokens_as_measured(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v26.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(VERSION_1)
    init_db(make_engine(f"sqlite:///{path}"))
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE answer_score DROP COLUMN tokens_measured")
        db.execute(
            "INSERT INTO answer_score (trial_id, scoring_id, sweep_id, model_id, prompt_id, "
            "toolset, baseline, scenario_id, outcome, grounded, unresolved, hallucinated, "
            "efficiency, fairness, adoption, tokens_reasoning, tokens_tool_io, "
            "tokens_verification, estimated_json, judge_model, rubric_id, rubric_hash, judge_s, "
            "citations_json, created_at) VALUES ('t1', 'pass', 'old', 'm', 'p', '', 0, 's', "
            "'pass', 0, 0, 0, 0.5, 0.5, 1.0, 40, 30, 0, '[]', '', '', '', 0.0, '[]', "
            "'2026-11-01 10:00:00')"
        )
        db.execute("DELETE FROM schema_version WHERE version > 26")
    engine = make_engine(f"sqlite:///{path}")
    assert schema_version(engine) == 26
    init_db(engine)
    assert schema_version(engine) == SCHEMA_VERSION
    with sqlite3.connect(path) as db:
        row = db.execute("select tokens_reasoning, tokens_measured from answer_score")
        assert row.fetchall() == [(40, 1)]
