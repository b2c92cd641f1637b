"""Held-out anchors for the drift guard: transcripts, the rubric and hand-graded gold scores,
frozen by SHA256 in a lockfile.

An anchor folder holds `anchor-*.json` (`{id, scenario, request, answer}`), `gold.yaml`
(`anchors: {anchor-id: {criterion: score}}`, optionally `rubric: <id>`) and, once locked,
`anchors.lock`. `farm anchors verify` refuses when any hash differs from the lock.

The lock also holds the gate's threshold (`farm anchors lock --threshold`, 0.85 by default),
and a seal: the SHA256 of everything else in it. A lock edited by hand (a hash, an id, the
threshold) no longer matches its seal, so verify says the lock changed rather than blaming a
file that did not.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_farm.scenarios.catalog import (
    ROOT,
    ScenarioError,
    load_rubric,
    load_suite,
)
from mcp_farm.schema import (
    AnswerSpec,
    Rubric,
    canonical_json,
    read_yaml,
)

ANCHORS_DIR = ROOT / "anchors"
LOCKFILE = "anchors.lock"
GOLD = "gold.yaml"
MIN_ANCHORS = 3
THRESHOLD = 0.85
"""Spearman's ρ between the judge's and the gold scores that a rubric/judge must reach, unless
the lock was written with another."""


@dataclass(frozen=True)
class Anchor:
    id: str
    scenario: str
    request: str
    answer: str


@dataclass(frozen=True)
class AnchorSet:
    folder: Path
    rubric_id: str
    rubric_hash: str
    """SHA256 of the rubric file as read now (what the lock compares and the verdict records)."""
    anchors: list[Anchor]
    gold: dict[str, dict[str, float]]
    """Gold score per anchor id per criterion id, on the rubric's scale."""
    answers: dict[str, AnswerSpec]
    """Per anchor id, the `answer` spec of its scenario: the judge sees an anchor exactly as
    it sees a trial of that scenario (reference answer, terms, citations)."""


def anchor_folder(name: str) -> Path:
    """`code` → scenarios/anchors/code; a path is taken as it is."""
    path = Path(name)
    return path if path.is_dir() or "/" in name else ANCHORS_DIR / name


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _transcripts(folder: Path) -> list[Path]:
    return sorted(folder.glob("anchor-*.json"))


def load_anchors(folder: Path, rubric_id: str | None = None) -> AnchorSet:
    """Read an anchor folder strictly: every criterion of the rubric graded for every anchor."""
    gold_file = folder / GOLD
    raw = read_yaml(gold_file)
    if not isinstance(raw, dict) or not isinstance(raw.get("anchors"), dict):
        raise ScenarioError(str(gold_file), "anchors", "expected a mapping anchor id → scores")
    rubric_id = rubric_id or str(raw.get("rubric", "code-answer"))
    rubric, rubric_hash = load_rubric(rubric_id, str(gold_file))
    anchors = [_read_anchor(p) for p in _transcripts(folder)]
    if len(anchors) < MIN_ANCHORS:
        raise ScenarioError(str(folder), "", f"needs at least {MIN_ANCHORS} anchor-*.json files")
    gold = {a.id: _gold_for(raw["anchors"], a.id, rubric, str(gold_file)) for a in anchors}
    suite = str(raw.get("suite", "code"))
    answers = {a.id: _answer_of(a, suite, folder) for a in anchors}
    return AnchorSet(folder, rubric_id, rubric_hash, anchors, gold, answers)


def _answer_of(anchor: Anchor, suite: str, folder: Path) -> AnswerSpec:
    """The `answer` spec of the anchor's scenario in `suite` (gold.yaml's `suite:`, `code`
    by default)."""
    for scenario in load_suite(suite).scenarios:
        if scenario.id == anchor.scenario and scenario.answer is not None:
            return scenario.answer
    raise ScenarioError(
        str(folder / f"{anchor.id}.json"),
        "scenario",
        f"{anchor.scenario!r} is no scenario with an `answer` in suite {suite!r}",
    )


def _read_anchor(path: Path) -> Anchor:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Anchor(**{k: str(data[k]) for k in ("id", "scenario", "request", "answer")})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ScenarioError(str(path), "", f"not an anchor transcript: {exc}") from None


def _gold_for(table: dict[str, Any], anchor: str, rubric: Rubric, source: str) -> dict[str, float]:
    scores = table.get(anchor)
    if not isinstance(scores, dict):
        raise ScenarioError(source, f"anchors.{anchor}", "no gold scores for this anchor")
    out = {}
    for _step, criterion in rubric.criteria:
        value = scores.get(criterion.id)
        if not isinstance(value, int | float) or not 0 <= value <= criterion.scale:
            raise ScenarioError(
                source,
                f"anchors.{anchor}.{criterion.id}",
                f"needs a gold score 0..{criterion.scale}, got {value!r}",
            )
        out[criterion.id] = float(value)
    return out


def current_hashes(anchors: AnchorSet) -> dict[str, Any]:
    """What the lock freezes: each transcript, the gold scores and the rubric, by SHA256."""
    return {
        "rubric": {"id": anchors.rubric_id, "sha256": anchors.rubric_hash},
        "gold": _sha(anchors.folder / GOLD),
        "transcripts": {p.name: _sha(p) for p in _transcripts(anchors.folder)},
    }


def _seal(content: dict[str, Any]) -> str:
    body = {k: v for k, v in content.items() if k != "seal"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def write_lock(anchors: AnchorSet, threshold: float = THRESHOLD) -> Path:
    if not 0 < threshold <= 1:
        raise ScenarioError(LOCKFILE, "threshold", f"must lie in (0, 1], got {threshold}")
    path = anchors.folder / LOCKFILE
    content = current_hashes(anchors) | {"threshold": threshold}
    content["seal"] = _seal(content)
    path.write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")
    return path


def read_lock(folder: Path) -> dict[str, Any] | None:
    """The lock of an anchor folder (None when there is none), refused in one line when it
    is not a JSON object or its threshold is not a number in (0, 1]."""
    path = folder / LOCKFILE
    if not path.exists():
        return None
    try:
        locked = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ScenarioError(str(path), "", f"not a readable JSON lock ({exc}): re-lock") from None
    if not isinstance(locked, dict):
        raise ScenarioError(
            str(path), "", f"a lock is a JSON object, got {type(locked).__name__}: re-lock"
        )
    threshold = locked.get("threshold", THRESHOLD)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise ScenarioError(str(path), "threshold", f"must be a number, got {threshold!r}")
    if not 0 < threshold <= 1:
        raise ScenarioError(str(path), "threshold", f"must lie in (0, 1], got {threshold}")
    return locked


def lock_threshold(folder: Path) -> float:
    """The gate's threshold: the lock's, or THRESHOLD without a lock."""
    locked = read_lock(folder)
    return float(locked.get("threshold", THRESHOLD)) if locked else THRESHOLD


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _apart(a: str, b: str) -> tuple[str, str]:
    """Two different hashes shortened to where they differ (12 characters at least), so
    they never print alike."""
    first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    n = max(12, (min(len(a), len(b)) if first is None else first) + 4)
    return a[:n], b[:n]


def lock_problems(anchors: AnchorSet) -> list[str]:
    """Every way the folder differs from its lock, in words; empty when it matches. When the
    lock itself was edited (its seal does not match), that is said first, and entries that
    differ are not blamed on the files."""
    locked = read_lock(anchors.folder)
    if locked is None:
        return [f"{anchors.folder / LOCKFILE} is missing: run `farm anchors lock` first"]
    now = current_hashes(anchors)
    problems = []
    edited = locked.get("seal") != _seal(locked)
    if edited:
        problems.append(
            f"{LOCKFILE} was edited after `farm anchors lock` wrote it (its seal does not "
            "match): check the change and re-lock"
        )
    since = "differs from the lock" if edited else "changed since the lock"
    rubric: dict[str, Any] = _mapping(locked.get("rubric"))
    if rubric.get("id") != now["rubric"]["id"]:
        problems.append(
            f"the lock names rubric {rubric.get('id')!r}, the gold file uses "
            f"{now['rubric']['id']!r}"
        )
    if rubric.get("sha256") != now["rubric"]["sha256"]:
        ours, theirs = _apart(now["rubric"]["sha256"], str(rubric.get("sha256", "")))
        problems.append(f"rubric {now['rubric']['id']} {since}: sha256 {ours} ≠ locked {theirs}")
    if locked.get("gold") != now["gold"]:
        problems.append(f"gold scores {GOLD} {since}")
    old: dict[str, Any] = _mapping(locked.get("transcripts"))
    new = now["transcripts"]
    for name in sorted(old.keys() | new.keys()):
        if old.get(name) != new.get(name):
            state = "added" if name not in old else "removed" if name not in new else since
            problems.append(f"anchor transcript {name} {state}")
    return problems
