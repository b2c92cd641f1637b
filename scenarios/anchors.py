"""Held-out anchors for the drift guard: transcripts, the rubric and hand-graded gold scores,
frozen by SHA256 in a lockfile.

An anchor folder holds `anchor-*.json` (`{id, scenario, request, answer}`), `gold.yaml`
(`anchors: {anchor-id: {criterion: score}}`, optionally `rubric: <id>`) and, once locked,
`anchors.lock`. `farm anchors verify` refuses when any hash differs from the lock.
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
)
from mcp_farm.schema import (
    Rubric,
    read_yaml,
)

ANCHORS_DIR = ROOT / "anchors"
LOCKFILE = "anchors.lock"
GOLD = "gold.yaml"
MIN_ANCHORS = 3
THRESHOLD = 0.85
"""Spearman's ρ between the judge's and the gold scores that a rubric/judge must reach."""


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
    return AnchorSet(folder, rubric_id, rubric_hash, anchors, gold)


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
        "threshold": THRESHOLD,
    }


def write_lock(anchors: AnchorSet) -> Path:
    path = anchors.folder / LOCKFILE
    path.write_text(json.dumps(current_hashes(anchors), indent=2) + "\n", encoding="utf-8")
    return path


def lock_problems(anchors: AnchorSet) -> list[str]:
    """Every way the folder differs from its lock, in words; empty when it matches."""
    path = anchors.folder / LOCKFILE
    if not path.exists():
        return [f"{path} is missing: run `farm anchors lock` first"]
    locked = json.loads(path.read_text(encoding="utf-8"))
    now = current_hashes(anchors)
    problems = []
    if locked.get("rubric") != now["rubric"]:
        problems.append(
            f"rubric {now['rubric']['id']} changed: sha256 {now['rubric']['sha256'][:12]} "
            f"≠ locked {str(locked.get('rubric', {}).get('sha256', ''))[:12]}"
        )
    if locked.get("gold") != now["gold"]:
        problems.append(f"gold scores {GOLD} changed since the lock")
    old, new = locked.get("transcripts", {}), now["transcripts"]
    for name in sorted(old.keys() | new.keys()):
        if old.get(name) != new.get(name):
            state = "added" if name not in old else "removed" if name not in new else "changed"
            problems.append(f"anchor transcript {name} {state} since the lock")
    return problems
