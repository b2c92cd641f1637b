"""A scorecard as Markdown (for a PR comment or a wiki) and as JUnit XML (for CI systems).

A card with an answer-quality section gets it as Markdown tables and as JUnit suite properties
(built in mcp_farm.scheduler.report.answer_tables); a card without one renders exactly as before.
"""

from __future__ import annotations

import re
from xml.etree import ElementTree as ET

from mcp_farm.scheduler.report.answer_tables import (
    answer_properties,
    answer_tables,
    unverified_note,
)
from mcp_farm.scheduler.report.cells import (
    CONVERSATION_HEADS,
    USER_HEADS,
    VARIANCE_HEADS,
    VARIANCE_NOTE,
    cassette_note,
    conversation_cells,
    dash_note,
    harness_note,
    interval,
    pct,
    recovery_cell,
    secs,
    shows_recovery,
    shows_state,
    state_cell,
    user_cells,
    user_notes,
    variance_rows,
)
from mcp_farm.scheduler.report.robustness_cells import (
    CURVE_HEADS,
    POSITION_HEADS,
    POSITION_TITLE,
    RANKING_HEADS,
    RANKING_NOTE,
    SELECTION_HEADS,
    SELECTION_NOTE,
    TOKENS_NOTE,
    curve_note,
    curve_rows,
    position_rows,
    ranking_rows,
    selection_rows,
)
from mcp_farm.scheduler.report.visible import visible_fields
from mcp_farm.scheduler.scorecard.build import outcome_columns
from mcp_farm.schema.scorecard import (
    AnswerQuality,
    Conversations,
    Row,
    Scorecard,
    TurnRow,
)

DIMENSION_TITLES = {
    "config": "Pass rate per model × prompt config",
    "tool": "Per tool the scenario expects",
    "tier": "Per tier",
    "phrasing": "Verbatim vs paraphrased prompts",
    "scenario": "Per scenario",
}


def _md_table(heads: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return [*lines, ""]


def _rate_cells(row: Row) -> list[str]:
    k = f"{pct(row.pass_hat_k)} / {pct(row.pass_at_k)} (k={row.k})" if row.k > 1 else "–"
    lat = row.latency
    return [
        str(row.n),
        pct(row.rate),
        pct(row.first_rate),
        interval(row),
        k,
        secs(lat.p50),
        secs(lat.p95),
    ]


def to_markdown(card: Scorecard) -> str:
    """The card as Markdown; what would hide in a name or note is shown as escapes."""
    card = visible_fields(card)
    lines = [
        f"# Scorecard {card.sweep_id}",
        "",
        f"{card.done}/{card.total} trials recorded; rates exclude infra errors. "
        f"Built {card.built_at} from sweep `{card.provenance.sweep_name}` "
        f"(farm {', '.join(card.provenance.farm_versions) or '?'}).",
        "",
    ]
    if harness := harness_note(card):
        lines += [f"> 🔴 **Harness error.** {harness}", ""]
    rate_heads = ["n", "pass", "1st try", "95% CI", "pass^k / pass@k", "p50", "p95"]
    for dimension, title in DIMENSION_TITLES.items():
        rows = card.of(dimension)  # type: ignore[arg-type]
        if not rows:
            continue
        key_head = [] if dimension == "config" else [dimension]
        lines += [f"## {title}", ""]
        recovery = shows_recovery(card, dimension)
        state = shows_state(card, dimension)
        lines += _md_table(
            [
                "model",
                "prompt",
                *key_head,
                *rate_heads[:3],
                *(["recovered"] if recovery else []),
                *(["state"] if state else []),
                *rate_heads[3:],
            ],
            [
                [
                    r.model,
                    r.prompt,
                    *([r.key] if key_head else []),
                    *_rate_cells(r)[:3],
                    *([recovery_cell(r)] if recovery else []),
                    *([state_cell(r)] if state else []),
                    *_rate_cells(r)[3:],
                ]
                for r in rows
            ],
        )
    note = dash_note(card, speed=False)
    if note:
        lines += [f"_{note}_", ""]
    if cassette := cassette_note(card):
        lines += [f"> {cassette}", ""]
    outcomes = outcome_columns(card)
    lines += ["## Outcomes", ""]
    lines += _md_table(
        ["model", "prompt", *outcomes],
        [
            [r.model, r.prompt, *(str(r.outcomes.get(o, 0)) for o in outcomes)]
            for r in card.of("config")
        ],
    )
    if card.conversations:
        lines += ["## Conversations", ""]
        lines += _md_table(
            ["model", "prompt", *CONVERSATION_HEADS],
            [[c.model, c.prompt, *conversation_cells(c)] for c in card.conversations],
        )
    if card.simulated_users:
        lines += ["## Simulated users", ""]
        lines += _md_table(
            ["model", "prompt", *USER_HEADS],
            [[u.model, u.prompt, *user_cells(u)] for u in card.simulated_users],
        )
        lines += [*(f"- {note}" for note in user_notes(card)), ""]
        if split := variance_rows(card):
            lines += ["### Agent × user variance", ""]
            lines += _md_table(["model", "prompt", *VARIANCE_HEADS], split)
            lines += [VARIANCE_NOTE, ""]
    lines += _robustness_markdown(card)
    if card.selection:
        lines += ["## Tool selection before the model", ""]
        lines += _md_table(["model", "prompt", *SELECTION_HEADS], selection_rows(card))
        lines += [SELECTION_NOTE, ""]
        lines += ["### Ranks, ties and time", ""]
        lines += _md_table(["model", "prompt", *RANKING_HEADS], ranking_rows(card))
        lines += [RANKING_NOTE, ""]
    if card.answers is not None:
        lines += _answers_markdown(card.answers)
    return "\n".join(lines)


def _robustness_markdown(card: Scorecard) -> list[str]:
    """The tool-count curves, their notes and the pass rate by list position; none without."""
    lines: list[str] = []
    curve_heads = ["model", "prompt", "descriptions", "names"]
    if card.robustness:
        lines += ["## Pass rate against tool count", ""]
        lines += _md_table([*curve_heads, *CURVE_HEADS], curve_rows(card))
        lines += [*(f"- {curve_note(c)}" for c in card.robustness), ""]
        if any(p.prompt_tokens is not None for c in card.robustness for p in c.points):
            lines += [TOKENS_NOTE, ""]
    if card.positions:
        lines += [f"### {POSITION_TITLE}", ""]
        lines += _md_table([*curve_heads, *POSITION_HEADS], position_rows(card))
    return lines


def _answers_markdown(answers: AnswerQuality) -> list[str]:
    lines = [
        "## Answer quality",
        "",
        f"Scoring `{answers.scoring_id}` ({answers.kind}), judge `{answers.judge or 'none'}`.",
        "",
    ]
    note = unverified_note(answers)
    if note:
        lines += [f"> **Unverified ranking.** {note}", ""]
    for table in answer_tables(answers):
        lines += [f"### {table.title}", ""]
        lines += _md_table(table.heads, table.rows)
        lines += [f"_{table.caption}_", ""]
    return lines


def _rate_properties(row: Row | None) -> list[tuple[str, str]]:
    """The config's pass rate and first-try pass rate as JUnit properties (empty: unknown)."""
    rate, first = (row.rate, row.first_rate) if row else (None, None)
    rates = [
        (name, "" if value is None else f"{value:.4f}")
        for name, value in (("pass_rate", rate), ("first_try_rate", first))
    ]
    if row is None or not row.probed:
        return rates
    # Graded by state too (docs/state.md): the state pass rate and the disagreements.
    return [
        *rates,
        ("state_pass_rate", "" if row.state_rate is None else f"{row.state_rate:.4f}"),
        ("wrong_state", str(row.outcomes.get("wrong_state", 0))),
        ("other_path", str(row.other_path)),
    ]


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """Text a model or server wrote, made writable in XML 1.0 (which has no escape for most
    control characters): ElementTree escapes markup but writes those as they are."""
    return _NOT_XML.sub("\ufffd", text)


def _conversation_properties(talk: Conversations | None) -> list[tuple[str, str]]:
    """A config's conversation rates as JUnit properties; none without conversations."""
    if talk is None:
        return []
    return [
        (name, "" if value is None else f"{value:.4f}")
        for name, value in (
            ("conversation_pass_rate", talk.rate),
            ("turn_pass_rate", talk.turn_rate),
            ("conversation_pass_hat_k", talk.pass_hat_k if talk.k > 1 else None),
        )
    ]


def _scenario_case(suite: ET.Element, r: Row, turns: list[TurnRow]) -> None:
    """A scenario's case, then (for a conversation) one case per turn reached."""
    case = ET.SubElement(
        suite,
        "testcase",
        classname=f"{r.model}.{r.prompt}",
        name=r.key,
        time=f"{r.latency.p50 or 0:.3f}",
    )
    counts = ", ".join(f"{o} {c}" for o, c in r.outcomes.items())
    failed = [f"turn {t.turn} ({t.graded - t.passes})" for t in turns if t.passes < t.graded]
    if not r.n:
        ET.SubElement(case, "error", message=f"no graded trial ({counts})")
    elif r.passes < r.n:
        turns_note = f"; failed turns: {', '.join(failed)}" if failed else ""
        failure = ET.SubElement(
            case, "failure", message=f"passed {r.passes}/{r.n}: {counts}{turns_note}"
        )
        failure.text = f"pass rate {pct(r.rate)} (95% CI {interval(r)})"
    for t in turns:
        _turn_case(suite, t)


def _turn_case(suite: ET.Element, t: TurnRow) -> None:
    """One turn of a conversation over its repetitions; its failure names the turn, its
    outcomes and the first failed instance's detail."""
    case = ET.SubElement(
        suite, "testcase", classname=f"{t.model}.{t.prompt}.{t.scenario}", name=f"turn {t.turn}"
    )
    if t.passes == t.graded:
        return
    counts = ", ".join(f"{o} {c}" for o, c in t.outcomes.items() if o != "pass")
    detail = _xml_text(t.detail)
    failure = ET.SubElement(
        case,
        "failure",
        message=f"turn {t.turn} passed {t.passes}/{t.graded}: {counts}: {detail[:300]}",
    )
    unreached = t.conversations - t.graded
    failure.text = f"turn {t.turn}: {detail}" + (
        f"\n(not reached in {unreached} of {t.conversations} repetitions)" if unreached else ""
    )


def to_junit(card: Scorecard) -> str:
    """One test suite per model × prompt config, one test case per scenario in it, and for a
    conversation one more case per turn (classname `model.prompt.scenario`, so a CI system
    shows the conversation as a class and the turn that failed as its case).

    A case fails when any of its repetitions failed (the message gives the outcome counts, and
    for a conversation the turns that failed); one whose trials all hit infrastructure errors
    is reported as an error, not a failure.
    """
    # A CI page shows these names: what would hide in them is written as escapes.
    card = visible_fields(card)
    root = ET.Element("testsuites", name=f"farm {card.sweep_id}")
    by_config: dict[tuple[str, str], list[Row]] = {}
    for row in card.of("scenario"):
        by_config.setdefault((row.model, row.prompt), []).append(row)
    turns: dict[tuple[str, str, str], list[TurnRow]] = {}
    for turn in card.turns:
        turns.setdefault((turn.model, turn.prompt, turn.scenario), []).append(turn)
    answers = card.answers
    scored = {(r.model, r.prompt): r for r in answers.of("config")} if answers else {}
    configs = {(r.model, r.prompt): r for r in card.of("config")}
    talks = {(c.model, c.prompt): c for c in card.conversations}
    for (model, prompt), rows in by_config.items():
        its_turns = [t for r in rows for t in turns.get((model, prompt, r.key), [])]
        failures = sum(1 for r in rows if r.n and r.passes < r.n)
        failures += sum(1 for t in its_turns if t.passes < t.graded)
        errors = sum(1 for r in rows if not r.n)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"{model}/{prompt}",
            tests=str(len(rows) + len(its_turns)),
            failures=str(failures),
            errors=str(errors),
            time=f"{sum((r.latency.p50 or 0) * r.n for r in rows):.3f}",
        )
        # JUnit wants <properties> before the test cases: the config's rates, then its
        # answer quality when the sweep scored answers.
        properties = ET.SubElement(suite, "properties")
        for name, value in [
            *_rate_properties(configs.get((model, prompt))),
            *_conversation_properties(talks.get((model, prompt))),
        ]:
            ET.SubElement(properties, "property", name=name, value=value)
        if answers is not None and (model, prompt) in scored:
            for name, value in answer_properties(answers, scored[(model, prompt)]):
                ET.SubElement(properties, "property", name=name, value=value)
        for r in rows:
            _scenario_case(suite, r, turns.get((model, prompt, r.key), []))
    if harness := harness_note(card):
        # A bug in the farm fails the report's consumer loudly, in its own suite.
        suite = ET.SubElement(root, "testsuite", name="farm harness", tests="1", errors="1")
        case = ET.SubElement(suite, "testcase", classname="farm", name="harness")
        ET.SubElement(case, "error", message=harness)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
