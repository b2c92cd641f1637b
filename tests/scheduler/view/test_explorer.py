"""The trial explorer's pages and terminal commands over a real embedded sweep: what each page
answers, its filters, its safety (escaping, CSP, read only, loopback or a password)."""

from __future__ import annotations

import base64
import json
import re
import socket
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import get_args

import pytest
from sqlalchemy import insert, text
from sqlalchemy.exc import OperationalError
from starlette.testclient import TestClient

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.view.app import CSP, ViewError, check_bind, create_app
from mcp_farm.scheduler.view.filters import PAGE_SIZE, FilterError, Sort, TrialFilter
from mcp_farm.scheduler.view.queries import COUNT_CAP, page_statements, trial_page, trial_record
from mcp_farm.scheduler.view.transcript import verdict
from mcp_farm.scheduler.view.trial_page import trial_page as one_trial_page
from mcp_farm.schema.db import AnswerScoreRow, JudgementRow, ScoringRow, init_db, make_engine
from tests.scheduler.view.conftest import LOCAL, REPLY_PAYLOAD, TOOL_PAYLOAD, Recorded, farm


def client(recorded: Recorded, **auth: str) -> TestClient:
    return TestClient(create_app(recorded.engine(), **auth), base_url=LOCAL)


def rows(page: str) -> list[str]:
    return re.findall(r'href="/trials/([0-9a-f]+)"', page)


def test_the_sweep_list_links_each_sweep_with_its_progress(recorded: Recorded) -> None:
    page = client(recorded).get("/")
    assert page.status_code == 200
    assert f'href="/sweeps/{recorded.sweep_id}"' in page.text
    assert "4/4" in page.text and "finished" in page.text
    assert 'http-equiv="refresh"' not in page.text, "a finished sweep needs no reloading"


def test_every_scorecard_count_links_to_the_trials_it_counts(recorded: Recorded) -> None:
    web = client(recorded)
    page = web.get(f"/sweeps/{recorded.sweep_id}").text
    cell = re.search(
        r'href="([^"]*model=careless[^"]*outcome=wrong_params[^"]*)">wrong_params 2<', page
    )
    assert cell, "the careless model's failures are not a link"
    trials = web.get(cell.group(1).replace("&amp;", "&")).text
    assert len(rows(trials)) == 2
    assert recorded.careless in rows(trials)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, 4),
        ({"model": "careless"}, 2),
        ({"config": "native", "outcome": "pass"}, 2),
        ({"outcome": "wrong_params", "first_try": "no"}, 2),
        ({"tier": "moderate"}, 0),
        ({"tool": "read_file", "wording": "verbatim"}, 2),
        ({"wording": "paraphrased", "left_cassette": "no"}, 2),
        ({"search": "WHOLE VALUE"}, 2),
        ({"search": "100%_"}, 0),
        ({"scenario": "fs.budget-total", "status": "done", "sort": "slowest"}, 4),
        ({"route": "none"}, 0),
        ({"scoring": "none"}, 0),
        ({"graded": "yes"}, 4),
        ({"graded": "no", "sort": "newest"}, 0),
    ],
)
def test_each_filter_narrows_the_trials(
    recorded: Recorded, query: dict[str, str], expected: int
) -> None:
    page = client(recorded).get(f"/sweeps/{recorded.sweep_id}/trials", params=query)
    assert page.status_code == 200
    assert len(rows(page.text)) == expected


def test_a_bad_filter_is_refused_naming_the_field_and_value(recorded: Recorded) -> None:
    page = client(recorded).get(f"/sweeps/{recorded.sweep_id}/trials?outcome=wrong")
    assert page.status_code == 400
    assert "outcome=&#x27;wrong&#x27;" in page.text
    with pytest.raises(FilterError, match="colour"):
        TrialFilter.read({"colour": "red"})


def test_a_transcript_shows_calls_results_errors_and_the_failing_step(recorded: Recorded) -> None:
    page = client(recorded).get(f"/trials/{recorded.careless}").text
    assert "wrong_params" in page and "is not a whole value of the result of step 0" in page
    done = re.search(r"<tr><td>0</td><td>search_files</td>(?:(?!</tr>).)*#0 did</td>", page)
    assert done, "the call that did step 0 is not shown"
    failing = re.search(
        r"<tr><td>(\d)</td><td>(\w+)</td>(?:(?!</tr>).)*"
        r'class="failed-step">call 1: read_file\.path: ',
        page,
    )
    assert failing and failing.groups() == ("1", "read_file"), "the failing step's problem"
    assert "#0 filesystem.search_files" in page
    assert "/Documents/budget-q1-2026.md" in page, "the search result is missing"
    assert "no such file or folder" in page, "the call's error is missing"
    assert "Somewhere in my files" in page, "the user's turn is missing"
    assert "&quot;scenario_version&quot;: 1" in page, "the provenance is missing"
    assert f"/compare?a={recorded.careless}&amp;b={recorded.ideal}" in page


def test_a_trial_graded_before_steps_were_kept_marks_the_step_its_detail_names(
    recorded: Recorded,
) -> None:
    record = trial_record(engine=recorded.engine(), trial_id=recorded.careless)
    assert record is not None
    older = SimpleNamespace(**{**record.trial._mapping, "steps_json": "[]"})
    found = verdict(older, record.calls)
    assert [(s.number, s.label, s.named, s.problem) for s in found.steps] == [
        (0, "search_files", False, ""),
        (1, "read_file", True, ""),
    ]
    assert found.steps[1].calls == ["#1 error"]


def test_without_its_scenario_a_trial_shows_its_stored_steps_without_parameters(
    recorded: Recorded,
) -> None:
    record = trial_record(engine=recorded.engine(), trial_id=recorded.careless)
    assert record is not None
    gone = SimpleNamespace(**{**record.trial._mapping, "scenario_version": 999})
    found = verdict(gone, record.calls)
    assert [(s.number, s.label, s.calls, s.params) for s in found.steps] == [
        (0, "search_files", ["#0 did"], ""),
        (1, "read_file", [], ""),
    ]
    assert found.steps[1].named and found.steps[1].problem.startswith("call 1: read_file.path")
    assert "parameters not shown" in found.note and "999" in found.note
    page = one_trial_page(replace(record, trial=gone))
    assert "call 1: read_file.path" in page and "parameters not shown" in page


def test_without_its_scenario_a_conversation_shows_each_turns_stored_steps(
    recorded: Recorded,
) -> None:
    record = trial_record(engine=recorded.engine(), trial_id=recorded.careless)
    assert record is not None
    turns = [
        {"index": 0, "steps": [{"step": 0, "label": "search_files", "call": 0, "met_by": [0]}]},
        {"index": 1, "steps": [{"step": 0, "label": "read_file", "problem": "never called"}]},
    ]
    gone = SimpleNamespace(
        **{**record.trial._mapping, "scenario_version": 999, "turns_json": json.dumps(turns)}
    )
    found = verdict(gone, record.calls)
    assert [(s.turn, s.label, s.calls, s.problem) for s in found.steps] == [
        (1, "search_files", ["#0 did"], ""),
        (2, "read_file", [], "never called"),
    ]


def test_script_payloads_from_a_tool_and_a_reply_are_escaped_under_a_csp(
    recorded: Recorded,
) -> None:
    page = client(recorded).get(f"/trials/{recorded.careless}")
    assert page.headers["content-security-policy"] == CSP
    assert "script-src 'none'" in CSP
    assert "<script" not in page.text.lower() and "<img" not in page.text.lower()
    assert "&lt;script&gt;document.title=&#x27;pwned-tool&#x27;" in page.text
    assert "&lt;img src=x onerror=" in page.text
    assert TOOL_PAYLOAD not in page.text and REPLY_PAYLOAD not in page.text


def test_two_trials_side_by_side_mark_what_differs(recorded: Recorded) -> None:
    page = (
        client(recorded).get("/compare", params={"a": recorded.ideal, "b": recorded.careless}).text
    )
    differing = re.findall(r'<td>([^<]+)</td><td><pre class="differs">', page)
    assert {"model", "outcome", "call #1", "final answer"} <= set(differing)
    assert "call #0" not in differing, "the same first call is marked as a difference"


def test_the_explorer_cannot_write_to_the_database(recorded: Recorded) -> None:
    engine = recorded.engine()
    with pytest.raises(OperationalError, match=r"readonly|read-only"), engine.begin() as conn:
        conn.execute(text("delete from trial"))


def test_a_password_is_asked_for_when_one_is_set(recorded: Recorded) -> None:
    web = client(recorded, password="s3cret-pass")
    assert web.get("/").status_code == 401
    wrong = base64.b64encode(b"farm:nope").decode()
    assert web.get("/", headers={"Authorization": f"Basic {wrong}"}).status_code == 401
    right = base64.b64encode(b"farm:s3cret-pass").decode()
    assert web.get("/", headers={"Authorization": f"Basic {right}"}).status_code == 200


def test_listening_beyond_loopback_needs_a_password() -> None:
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    check_bind("0.0.0.0", "s3cret-pass")
    with pytest.raises(ViewError, match="FARM_VIEW_PASSWORD"):
        check_bind("0.0.0.0", None)
    with pytest.raises(ViewError):
        check_bind("192.168.1.20", "")
    with pytest.raises(ViewError, match="at least 8 characters"):
        check_bind("0.0.0.0", "short")


def test_farm_view_refuses_a_public_address_without_a_password(recorded: Recorded) -> None:
    done = farm("view", "--host", "0.0.0.0", data=recorded.data, timeout=60)
    assert done.returncode == 2
    assert "FARM_VIEW_PASSWORD" in done.stderr and "Traceback" not in done.stderr


def test_farm_view_on_a_port_in_use_says_so_in_one_line(recorded: Recorded) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = farm("view", "--port", port, data=recorded.data, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr


FILTERS = [
    {},
    {"model": "ideal", "config": "native", "scenario": "fs.budget-total"},
    {"outcome": "wrong_params"},
    {"scenario": "fs.budget-total"},
    {"left_cassette": "yes"},
    {"scoring": "pass-one"},
    {"graded": "yes", "left_cassette": "no"},
]


@pytest.mark.parametrize("sort", get_args(Sort))
@pytest.mark.parametrize("query", FILTERS)
def test_every_sort_of_every_filtered_page_reads_the_trial_table_in_index_order(
    recorded: Recorded, query: dict[str, str], sort: str
) -> None:
    with recorded.engine().connect() as conn:
        plan = page_statements(conn, "s", TrialFilter.read({**query, "sort": sort}))
        params = plan.params
        for sql in (plan.page_sql, plan.count_sql):
            plan = " | ".join(
                str(r[-1]) for r in conn.execute(text(f"explain query plan {sql}"), params)
            )
            # The sweep's range of an index, or (a scoring pass, counted) its list of trials
            # by primary key.
            assert re.search(
                r"SEARCH trial USING (COVERING )?INDEX \w+ \((sweep_id=\?|trial_id=\?\))", plan
            ), plan
            assert not re.search(r"SCAN trial(?! USING)", plan), plan
            # Unfiltered, a sort would read the whole sweep before the first row: the index
            # gives the order (a sort of the RIGHT PART only orders rows that tie on it). A
            # filtered page may sort, but only the rows its filter's index found
            # (tests/scheduler/view/test_filter_plans.py).
            if not query:
                assert "TEMP B-TREE FOR ORDER BY" not in plan, plan


def test_farm_trials_lists_the_failures_with_ids_for_trial_show(recorded: Recorded) -> None:
    listed = farm("trials", "--outcome", "wrong_params", data=recorded.data)
    assert listed.returncode == 0, listed.stderr
    assert recorded.careless in listed.stdout and recorded.ideal not in listed.stdout
    assert "2 trial(s); page 1 of 1" in listed.stdout
    assert "\x1b[" not in listed.stdout, "colour codes in plain output"
    bad = farm("trials", "--outcome", "wrong", data=recorded.data)
    assert bad.returncode == 2 and "outcome='wrong'" in bad.stderr


def test_farm_trial_show_prints_the_transcript_and_the_verdict(recorded: Recorded) -> None:
    shown = farm("trial", "show", recorded.careless[:12], data=recorded.data)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "verdict: wrong_params" in out
    assert re.search(r"step 0 search_files .*: #0 did$", out, re.MULTILINE)
    assert re.search(r"step 1 read_file .*: no call ← call 1: read_file\.path: ", out)
    assert "call #1 filesystem.read_file" in out and "no such file or folder" in out
    assert REPLY_PAYLOAD in out, "the reply is shown as the model wrote it"
    assert "\x1b[" not in out
    missing = farm("trial", "show", "ffffffffff", data=recorded.data)
    assert missing.returncode == 2 and "no trial" in missing.stderr


def test_a_trial_and_its_replay_open_side_by_side(recorded: Recorded) -> None:
    replayed = farm("replay", recorded.sweep_id, data=recorded.data)
    assert replayed.returncode == 0, replayed.stderr
    web = client(recorded)
    page = web.get(f"/trials/{recorded.careless}").text
    pair = re.search(r'href="(/compare\?a=[0-9a-f]+&amp;b=[0-9a-f]+)">replayed by ([^<]+)<', page)
    assert pair, "the replay is not linked"
    assert pair.group(1).startswith(f"/compare?a={recorded.careless}")
    side = web.get(pair.group(1).replace("&amp;", "&")).text
    differing = re.findall(r'<td>([^<]+)</td><td><pre class="differs">', side)
    assert "sweep" in differing and "model" not in differing and "call #1" not in differing
    replay_id = re.search(r"b=([0-9a-f]+)", pair.group(1)).group(1)  # type: ignore[union-attr]
    back = web.get(f"/trials/{replay_id}").text
    assert f"/compare?a={recorded.careless}&amp;b={replay_id}" in back, "no link back"


def test_answer_scores_and_judge_verdicts_show_and_select_by_scoring_pass(
    recorded: Recorded,
) -> None:
    now = datetime.now(UTC)
    writer = make_engine(f"sqlite:///{recorded.data / 'farm.sqlite'}")
    with writer.begin() as conn:
        conn.execute(
            insert(ScoringRow).values(
                scoring_id="pass-one",
                sweep_id=recorded.sweep_id,
                kind="rescore",
                created_at=now,
                config_json="{}",
            )
        )
        conn.execute(
            insert(AnswerScoreRow).values(
                trial_id=recorded.careless,
                scoring_id="pass-one",
                sweep_id=recorded.sweep_id,
                model_id="careless",
                prompt_id="native",
                scenario_id="fs.budget-total",
                outcome="wrong_params",
                efficiency=0.5,
                fairness=0.25,
                adoption=0.125,
                created_at=now,
            )
        )
        conn.execute(
            insert(JudgementRow).values(
                trial_id=recorded.careless,
                scoring_id="pass-one",
                run=0,
                criterion="correctness",
                sweep_id=recorded.sweep_id,
                step="answer",
                score=1.0,
                rationale="<b>names no total</b>",
            )
        )
    web = client(recorded)
    scored = web.get(f"/sweeps/{recorded.sweep_id}/trials", params={"scoring": "pass-one"})
    assert rows(scored.text) == [recorded.careless]
    page = web.get(f"/trials/{recorded.careless}").text
    assert "Answer scores" in page and "0.250" in page and "rescore" in page
    assert "Judge verdicts" in page and "&lt;b&gt;names no total&lt;/b&gt;" in page
    shown = farm("trial", "show", recorded.careless, data=recorded.data).stdout
    assert "fairness 0.250, adoption 0.125" in shown
    assert "correctness: 1.0 <b>names no total</b>" in shown


def test_counting_stops_at_the_cap_and_paging_goes_on_past_it(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    load(engine, "big", trials("big", [("m", "p")], scenarios(30, seed=2), 40, lambda *_: 0.5, 4))
    first = trial_page(engine=engine, sweep_id="big", selection=TrialFilter.read({}))
    assert first.capped and first.summary() == f"more than {COUNT_CAP:,} trial(s); page 1"
    assert first.has_next
    last_full = trial_page(
        engine=engine, sweep_id="big", selection=TrialFilter.read({"page": "24"})
    )
    # 1,200 trials: page 24 is full and the last; the row read past it says so.
    assert len(last_full.rows) == PAGE_SIZE and not last_full.has_next
    past = trial_page(engine=engine, sweep_id="big", selection=TrialFilter.read({"page": "25"}))
    assert past.rows == [] and not past.has_next
    few = trial_page(
        engine=engine, sweep_id="big", selection=TrialFilter.read({"scenario": "s0003"})
    )
    assert few.summary() == "40 trial(s); page 1 of 1" and not few.has_next
