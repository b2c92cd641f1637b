"""The HTML report opens in headless Chromium with its charts drawn and no script errors, with
and without an answer-quality section."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import text

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.queries.samples import sample_trials
from mcp_farm.schema.db import (
    init_db,
    make_engine,
)
from tests.scheduler.report.test_report_answers import (
    answer_quality,
    scorecard,
)

CONFIGS = [("big", "native"), ("small", "json")]


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is not installed: run `bash scripts/setup.sh --dev`")
        pytest.skip("Chromium is not installed (bash scripts/setup.sh --dev installs it)")
    return found


def _run(chromium: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_report_renders_its_charts_in_headless_chromium(tmp_path: Path) -> None:
    chromium = _chromium()
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    load(engine, "sw", trials("sw", CONFIGS, scenarios(12, seed=5), 4, lambda m, p, s: 0.6, 9))
    transcript = [
        {"role": "user", "content": "What's on my desktop?"},
        {"role": "assistant", "content": "", "tool_calls": [{"name": "list_directory"}]},
        {"role": "tool", "content": "todo.txt </script><b>not markup</b>"},
    ]
    with engine.begin() as conn:
        conn.execute(text("update trial set transcript_json = :t"), {"t": json.dumps(transcript)})
    card = build_scorecard(engine=engine, sweep_id="sw")
    page = tmp_path / "report.html"
    page.write_text(to_html(card, sample_trials(engine, "sw")), encoding="utf-8")

    dumped = _run(chromium, "--virtual-time-budget=5000", "--dump-dom", page.as_uri())
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    # Heatmap + one latency chart per configuration + failure bars.
    assert re.search(r'data-charts="(\d+)"', dom).group(1) == str(2 + len(CONFIGS))  # type: ignore[union-attr]
    assert '<pre id="errors"></pre>' in dom, "the page reported a script error"
    tools = {r.key for r in card.of("tool")}
    assert dom.count("<rect") >= len(tools) * len(CONFIGS)
    assert "not markup" in dom and "<b>not markup</b>" not in dom
    console = [line for line in dumped.stderr.splitlines() if "CONSOLE" in line]
    assert console == [], console

    shot = tmp_path / "report.png"
    taken = _run(chromium, "--window-size=1200,1600", f"--screenshot={shot}", page.as_uri())
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000, "the screenshot looks blank"


def test_the_answer_quality_charts_render_in_headless_chromium(tmp_path: Path) -> None:
    chromium = _chromium()
    card = scorecard(answer_quality(verified=False))
    page = tmp_path / "report.html"
    page.write_text(to_html(card), encoding="utf-8")

    dumped = _run(chromium, "--virtual-time-budget=5000", "--dump-dom", page.as_uri())
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    assert '<pre id="errors"></pre>' in dom, "the page reported a script error"
    configs = len(card.of("config"))
    # Heatmap, a latency chart per configuration, failure bars; then the three answer charts.
    assert re.search(r'data-charts="(\d+)"', dom).group(1) == str(2 + configs + 3)  # type: ignore[union-attr]
    for chart in ("answer-fairness", "answer-grounding", "answer-judge"):
        assert re.search(rf'<div id="{chart}"><svg', dom), f"{chart} was not drawn"
    assert dom.count('class="baseline"') == 2
    assert dom.count('class="noise-floor"') == 1
    assert "0 (structural)</text>" in dom
    console = [line for line in dumped.stderr.splitlines() if "CONSOLE" in line]
    assert console == [], console
