"""Schema versions. A new database gets every table at the latest version; an older one gets the
missing migrations applied in order, so results recorded by an earlier release are kept.

To change a table: edit schema/db/tables.py *and* append a migration here that brings an existing
database to the same shape. tests/schema/test_migrate.py checks both paths agree.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime

from sqlalchemy import inspect, select, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlmodel import SQLModel, col

from mcp_farm.schema.db.tables import BROWSE_ORDER, FILTER_INDEXES_BY_MIGRATION, SchemaVersionRow
from mcp_farm.schema.errors import StoreError
from mcp_farm.schema.redact import mask_url

logger = logging.getLogger(__name__)


def _filter_indexes(version: int) -> list[str]:
    """The explorer's filter indexes that migration `version` makes: the filter's column after
    the sweep, then scenario order (as TrialRow declares them)."""
    return [
        f"CREATE INDEX IF NOT EXISTS {name} ON trial (sweep_id, {column}, "
        f"{', '.join(BROWSE_ORDER)})"
        for name, column in FILTER_INDEXES_BY_MIGRATION[version]
    ]


MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "sweep, trial and tool_call tables", []),
    (
        2,
        "distributed mode: sweep status; trial queue, node and attempts; node and scorecard",
        [
            "ALTER TABLE sweep ADD COLUMN status VARCHAR NOT NULL DEFAULT 'active'",
            "ALTER TABLE trial ADD COLUMN queue VARCHAR NOT NULL DEFAULT ''",
            "ALTER TABLE trial ADD COLUMN node VARCHAR",
            "ALTER TABLE trial ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0",
            "CREATE INDEX IF NOT EXISTS ix_trial_sweep_status ON trial (sweep_id, status)",
        ],
    ),
    (
        3,
        "paraphrased prompts and time in the model: trial variant and model_s",
        [
            "ALTER TABLE trial ADD COLUMN variant INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE trial ADD COLUMN model_s FLOAT",
        ],
    ),
    (
        4,
        "answer quality: trial tool set; scoring, answer_score, judgement, anchor_check tables",
        # The new tables come from create_all above; only the trial table changes shape.
        ["ALTER TABLE trial ADD COLUMN toolset VARCHAR NOT NULL DEFAULT ''"],
    ),
    (
        5,
        "fault tolerance: the lease of a running trial (trial beat_at)",
        ["ALTER TABLE trial ADD COLUMN beat_at TIMESTAMP"],
    ),
    (
        6,
        "fast scorecards: tool_call carries its trial's sweep, model, prompt and tool set",
        [
            *(
                f"ALTER TABLE tool_call ADD COLUMN {name} VARCHAR NOT NULL DEFAULT ''"
                for name in ("sweep_id", "model_id", "prompt_id", "toolset")
            ),
            # Correlated subqueries rather than UPDATE … FROM: both databases read them alike.
            "UPDATE tool_call SET "
            + ", ".join(
                f"{name} = (SELECT t.{name} FROM trial t WHERE t.trial_id = tool_call.trial_id)"
                for name in ("sweep_id", "model_id", "prompt_id", "toolset")
            ),
            "CREATE INDEX IF NOT EXISTS ix_tool_call_sweep ON tool_call (sweep_id)",
        ],
    ),
    (
        7,
        "seeded servers: the setup calls made before the model started (trial setup_json)",
        ["ALTER TABLE trial ADD COLUMN setup_json VARCHAR NOT NULL DEFAULT '[]'"],
    ),
    (
        8,
        "first-try accuracy: whether a pass had no wrong or repeated call (trial first_try)",
        ["ALTER TABLE trial ADD COLUMN first_try BOOLEAN"],
    ),
    (
        9,
        "alternative routes: the route a trial of a routed scenario took (trial route)",
        ["ALTER TABLE trial ADD COLUMN route VARCHAR"],
    ),
    (
        10,
        "cassettes: whether a trial called a replayed server off its recording (trial "
        "left_cassette)",
        ["ALTER TABLE trial ADD COLUMN left_cassette BOOLEAN NOT NULL DEFAULT FALSE"],
    ),
    (
        11,
        "whole results for replay: the whole text and the structured content of a result "
        "(tool_call whole_json)",
        ["ALTER TABLE tool_call ADD COLUMN whole_json VARCHAR NOT NULL DEFAULT ''"],
    ),
    (
        12,
        "trial explorer: indexes for a sweep's trials by configuration and scenario, by "
        "outcome, by latency, and by scenario",
        [
            "CREATE INDEX IF NOT EXISTS ix_trial_browse ON trial (sweep_id, model_id, "
            "prompt_id, toolset, scenario_id, repetition, variant)",
            "CREATE INDEX IF NOT EXISTS ix_trial_browse_outcome ON trial (sweep_id, outcome, "
            "model_id, prompt_id, toolset, scenario_id, repetition, variant)",
            "CREATE INDEX IF NOT EXISTS ix_trial_browse_latency ON trial (sweep_id, latency_s)",
            "CREATE INDEX IF NOT EXISTS ix_trial_browse_scenario ON trial (sweep_id, scenario_id, "
            "repetition)",
        ],
    ),
    (
        13,
        "what a gate run verified: the anchor folder, its lock's hash and threshold (anchor_check "
        "folder, lock_sha256, threshold)",
        [
            "ALTER TABLE anchor_check ADD COLUMN folder VARCHAR NOT NULL DEFAULT ''",
            "ALTER TABLE anchor_check ADD COLUMN lock_sha256 VARCHAR NOT NULL DEFAULT ''",
            "ALTER TABLE anchor_check ADD COLUMN threshold FLOAT",
        ],
    ),
    (
        14,
        "conversations: each turn of a trial with its own verdict (trial turns_json)",
        ["ALTER TABLE trial ADD COLUMN turns_json VARCHAR NOT NULL DEFAULT '[]'"],
    ),
    (
        15,
        "recovery after an error: whether a trial's failed calls were followed by one that "
        "did a step (trial recovered)",
        ["ALTER TABLE trial ADD COLUMN recovered BOOLEAN"],
    ),
    (
        16,
        "which call did which step: each expected step with its call or its problem (trial "
        "steps_json)",
        ["ALTER TABLE trial ADD COLUMN steps_json VARCHAR NOT NULL DEFAULT '[]'"],
    ),
    (
        17,
        "elicitation: the servers' requests for user input during a trial and the scripted "
        "answers (trial elicitations_json)",
        ["ALTER TABLE trial ADD COLUMN elicitations_json VARCHAR NOT NULL DEFAULT '[]'"],
    ),
    (
        18,
        "simulated users: the user's identity, cost and errors, how many of its messages "
        "invented a fact, and whose mistake failed the trial (trial user_sim_json, "
        "user_identity, user_errors, failure_source)",
        [
            "ALTER TABLE trial ADD COLUMN user_sim_json VARCHAR NOT NULL DEFAULT ''",
            "ALTER TABLE trial ADD COLUMN user_identity VARCHAR",
            "ALTER TABLE trial ADD COLUMN user_errors INTEGER",
            "ALTER TABLE trial ADD COLUMN failure_source VARCHAR",
        ],
    ),
    (
        19,
        "reproducible users: the cache of simulated users' turns at temperature 0 (user_turn "
        "table)",
        # The new table comes from create_all above.
        [],
    ),
    (
        20,
        "trial explorer: an index for a sweep's trials newest first (ix_trial_browse_newest)",
        [
            "CREATE INDEX IF NOT EXISTS ix_trial_browse_newest ON trial (sweep_id, finished_at)",
        ],
    ),
    (
        21,
        "state probes: each probe expected vs found and how state and calls compared (trial "
        "state_json, state_passed, other_path)",
        [
            "ALTER TABLE trial ADD COLUMN state_json VARCHAR NOT NULL DEFAULT ''",
            "ALTER TABLE trial ADD COLUMN state_passed BOOLEAN",
            "ALTER TABLE trial ADD COLUMN other_path BOOLEAN",
        ],
    ),
    (
        22,
        "trial explorer: an index per filter that had none (tier, wording, first try, route, "
        "left the cassette), each in scenario order",
        _filter_indexes(22),
    ),
    (
        23,
        "trial explorer: an index for the other_path filter (state passed, calls did not), in "
        "scenario order",
        _filter_indexes(23),
    ),
    (
        24,
        "trial explorer: a trigram index for the text search on PostgreSQL "
        "(ix_trial_detail_trgm, where the pg_trgm extension can be created)",
        # Made by `text_search_index` below: PostgreSQL only, and optional.
        [],
    ),
    (
        25,
        "agents: whether a trial's tokens were measured, or not (an agent's model calls the "
        "farm did not see) (trial tokens_measured)",
        ["ALTER TABLE trial ADD COLUMN tokens_measured BOOLEAN NOT NULL DEFAULT TRUE"],
    ),
    (
        26,
        "agents: what an agent's command wrote, bounded (trial agent_output_json)",
        ["ALTER TABLE trial ADD COLUMN agent_output_json VARCHAR NOT NULL DEFAULT ''"],
    ),
    (
        27,
        "agents: whether an answer score's reasoning tokens were measured, or not (an agent's "
        "model calls the farm did not see) (answer_score tokens_measured)",
        ["ALTER TABLE answer_score ADD COLUMN tokens_measured BOOLEAN NOT NULL DEFAULT TRUE"],
    ),
]
LATEST = MIGRATIONS[-1][0]

TEXT_SEARCH_INDEX = "ix_trial_detail_trgm"
TEXT_SEARCH_SINCE = 24
TEXT_SEARCH_SQL = (
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    f"CREATE INDEX IF NOT EXISTS {TEXT_SEARCH_INDEX} ON trial "
    "USING gin (lower(detail) gin_trgm_ops)",
)
"""The explorer's text search (`lower(detail) like '%…%'`, scheduler/view/queries/where.py) reads
this index on PostgreSQL: trigrams, so a substring anywhere is found without reading each
trial of the sweep. SQLite has no such index; its sweeps are embedded-sized."""


def text_search_index(conn: Connection) -> str | None:
    """On PostgreSQL, make the text search's trigram index (and the pg_trgm extension it
    needs) unless it is there; a one-line note, instead of an error, where this database
    user may not create the extension (or the server lacks it): the search then reads each
    trial of the sweep it narrows to, as before. Nothing on SQLite."""
    if conn.dialect.name != "postgresql":
        return None
    found = conn.execute(
        text("SELECT 1 FROM pg_indexes WHERE tablename = 'trial' AND indexname = :name"),
        {"name": TEXT_SEARCH_INDEX},
    ).first()
    if found is not None:
        return None
    try:
        with conn.begin_nested():  # a refusal rolls back this alone, not the migration
            for statement in TEXT_SEARCH_SQL:
                conn.execute(text(statement))
    except DBAPIError as exc:
        if exc.connection_invalidated:
            raise
        said = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
        return (
            f"note: no trigram index for the explorer's text search ({said}); it reads each "
            "trial of a sweep instead. A superuser can run `CREATE EXTENSION pg_trgm` in this "
            "database, then `farm db init` again"
        )
    return None


def text_search_ready(engine: Engine) -> str | None:
    """`text_search_index` in a transaction of its own (`farm db init` tries again each time,
    so an extension installed later gets its index); its note, if any."""
    try:
        with engine.begin() as conn:
            return text_search_index(conn)
    except OperationalError as exc:
        raise StoreError(f"cannot reach the database: {exc.orig}") from None


def _current(conn: Connection) -> int:
    found = conn.execute(select(col(SchemaVersionRow.version))).scalars().all()
    # A database with a trial table but no recorded version predates versioning: version 1.
    return max(found, default=1)


def _stamp(conn: Connection, version: int, description: str) -> None:
    conn.execute(
        SchemaVersionRow.__table__.insert().values(  # type: ignore[attr-defined]
            version=version, applied_at=datetime.now(UTC), description=description
        )
    )


ADD_COLUMN = re.compile(r"ALTER TABLE (\w+) ADD COLUMN (\w+)")


def _apply(conn: Connection, statement: str) -> None:
    """Run one migration statement. A column added to a table that create_all made in this very
    run (the table came after the database's version) is there already: skipped."""
    added = ADD_COLUMN.match(statement)
    if added is not None:
        table, column = added.groups()
        if column in {c["name"] for c in inspect(conn).get_columns(table)}:
            return
    conn.execute(text(statement))


def _note(note: str | None) -> None:
    if note is not None:
        logger.warning("%s", note)


def migrate(engine: Engine) -> int:
    """Bring the database to the latest schema version; returns the version it was at."""
    try:
        with engine.begin() as conn:
            fresh = not inspect(conn).has_table("trial")
            SQLModel.metadata.create_all(conn)
            if fresh:
                for version, description, _ in MIGRATIONS:
                    _stamp(conn, version, description)
                _note(text_search_index(conn))
                return 0
            start = _current(conn)
            for version, description, statements in MIGRATIONS:
                if version > start:
                    for statement in statements:
                        _apply(conn, statement)
                    if version == TEXT_SEARCH_SINCE:
                        _note(text_search_index(conn))
                    _stamp(conn, version, description)
            return start
    except OperationalError as exc:
        raise StoreError(f"cannot reach the database: {exc.orig}") from None


def schema_version(engine: Engine) -> int:
    """The version the database is at (0 when it has no tables yet)."""
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table("trial"):
                return 0
            if not inspect(conn).has_table("schema_version"):
                return 1
            return _current(conn)
    except OperationalError as exc:
        raise StoreError(f"cannot reach the database: {exc.orig}") from None


def require_latest(engine: Engine, url: str) -> None:
    """Fail with what to do when the database is older than this code (workers call this)."""
    found = schema_version(engine)
    if found < LATEST:
        # The URL may hold the database password, and this message lands in worker logs. A
        # SQLite file is an embedded farm's, on this machine: no head node to speak of.
        where = (
            "with the same --db or --data-dir to upgrade it in place (its results are kept)"
            if url.startswith("sqlite")
            else "on the head node with FARM_DATABASE_URL set to it"
        )
        raise StoreError(
            f"the results database at {mask_url(url)} is at schema version {found}, this farm "
            f"needs {LATEST}: run `farm db init` {where}"
        )
