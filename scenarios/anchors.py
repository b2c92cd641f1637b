"""Held-out anchors for the drift guard: transcripts, the rubric and hand-graded gold scores,
frozen by SHA256 in a lockfile.

An anchor folder holds `anchor-*.json` (`{id, scenario, request, answer}`), `gold.yaml`
(`anchors: {anchor-id: {criterion: score}}`, optionally `rubric: <id>`) and, once locked,
`anchors.lock`. The lock also seals, per anchor, what the judge is shown besides the
transcript: the reference answer, expected terms and citations of the anchor's scenario, so
editing them in the suite is a mismatch just as editing a transcript is. `farm anchors verify`
refuses when any hash differs from the lock.

The lock also holds the gate's threshold (`farm anchors lock --threshold`, 0.85 by default;
lower only with `--allow-lower-threshold`, which the lock records as `lowered`), and a seal: the
SHA256 of everything else in it. A lock edited by hand (a hash, an id, the
threshold) no longer matches its seal, so verify says the lock changed rather than blaming a
file that did not.
"""

from __future__ import annotations

import hashlib
import json
import re
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
    digest,
    read_yaml,
)
from mcp_farm.schema.scorecard import ANCHOR_THRESHOLD

ANCHORS_DIR = ROOT / "anchors"
LOCKFILE = "anchors.lock"
GOLD = "gold.yaml"
MIN_ANCHORS = 3
HEX = re.compile(r"[0-9a-f]*")
THRESHOLD = ANCHOR_THRESHOLD
"""Spearman's ρ between the judge's and the gold scores that a rubric/judge must reach, unless
the lock was written with another (a lower one only with `allow_lower`)."""
SHOWN_FROM_SPEC = {
    "reference": "reference answer",
    "keywords": "expected terms",
    "citations": "expected citations",
}
"""The fields of a scenario's `answer` spec the judge is shown besides the transcript (what
`shown_to_judge` takes from it; a test holds the two together), each with the words a lock
problem names it by."""


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
    """What the lock freezes: each transcript, the gold scores, the rubric and, per anchor,
    what the judge is shown from its scenario, by SHA256."""
    return {
        "rubric": {"id": anchors.rubric_id, "sha256": anchors.rubric_hash},
        "gold": _sha(anchors.folder / GOLD),
        "transcripts": {p.name: _sha(p) for p in _transcripts(anchors.folder)},
        "shown": _shown_hashes(anchors),
    }


def _shown_hashes(anchors: AnchorSet) -> dict[str, dict[str, str]]:
    """Per anchor id, its scenario and the SHA256 of each `answer` field the judge sees with it
    (one hash per field, so a problem can say which changed)."""
    return {
        a.id: {"scenario": a.scenario}
        | {field: digest(getattr(anchors.answers[a.id], field)) for field in SHOWN_FROM_SPEC}
        for a in anchors.anchors
    }


def _seal(content: dict[str, Any]) -> str:
    body = {k: v for k, v in content.items() if k != "seal"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def write_lock(anchors: AnchorSet, threshold: float = THRESHOLD, allow_lower: bool = False) -> Path:
    """Seal the folder's hashes and the gate's threshold. A threshold below the seed's 0.85 is
    refused unless `allow_lower`; the lock then records that it was lowered on purpose."""
    if not 0 < threshold <= 1:
        raise ScenarioError(LOCKFILE, "threshold", f"must lie in (0, 1], got {threshold}")
    if threshold < THRESHOLD and not allow_lower:
        raise ScenarioError(
            LOCKFILE,
            "threshold",
            f"{threshold:g} is below the seed's {THRESHOLD:g}: pass --allow-lower-threshold to "
            "lock it anyway (every report will show the gate as lowered)",
        )
    path = anchors.folder / LOCKFILE
    content = current_hashes(anchors) | {"threshold": threshold}
    if threshold < THRESHOLD:
        content["lowered"] = True
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


def lock_sha256(folder: Path) -> str:
    """SHA256 of the folder's lock file as it is now (empty when there is none)."""
    path = folder / LOCKFILE
    return _sha(path) if path.exists() else ""


def shown_folder(folder: Path) -> str:
    """An anchor folder as a verdict names it: relative to the repository when inside it,
    else absolute."""
    resolved = folder.resolve()
    root = ROOT.parent
    return str(resolved.relative_to(root)) if resolved.is_relative_to(root) else str(resolved)


def lock_threshold(folder: Path) -> float:
    """The gate's threshold: the lock's, or THRESHOLD without a lock."""
    locked = read_lock(folder)
    return float(locked.get("threshold", THRESHOLD)) if locked else THRESHOLD


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _hash(value: Any) -> str:
    """A hash as written in the lock, for comparing: case and surrounding spaces aside."""
    return str(value).strip().lower() if value is not None else ""


def _apart(a: str, b: str) -> tuple[str, str]:
    """Two different hashes shortened to where they differ (12 characters at least), so
    they never print alike; anything but lowercase hex digits is shown escaped (`ascii`), so
    a space or a look-alike letter cannot pass for the digit beside it."""
    first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    n = max(12, (min(len(a), len(b)) if first is None else first) + 4)
    shown = a[:n], b[:n]
    if all(HEX.fullmatch(x) for x in shown):
        return shown
    return ascii(shown[0]), ascii(shown[1])


def _listed(names: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0]


def _which(names: list[str], rest: str) -> str:
    """`a.json, which is …` or `a.json and b.json, which are …`."""
    return (
        f"{_listed(names)}, which {'are' if len(names) > 1 else 'is'}{' ' + rest if rest else ''}"
    )


def _renamed(old: dict[str, Any], new: dict[str, str]) -> dict[str, str]:
    """Locked name → name on disk, for a file on disk under another name that has the very
    hash locked for the first."""
    missing = {_hash(old[n]): n for n in old if n not in new}
    return {missing[h]: n for n, h in new.items() if n not in old and h in missing}


def _transcript_problems(old: dict[str, Any], new: dict[str, str], edited: bool) -> list[str]:
    """Transcripts that differ from the lock. With the lock edited, names that do not match
    are put on the lock (an id edited there) as much as on the files, never on the files
    alone; with the lock as written, the files were added, removed or renamed."""
    since = "differs from the lock" if edited else "changed since the lock"
    problems = [
        f"anchor transcript {name} {since}"
        for name in sorted(old.keys() & new.keys())
        if _hash(old[name]) != _hash(new[name])
    ]
    gone, extra = sorted(old.keys() - new.keys()), sorted(new.keys() - old.keys())
    moved = _renamed(old, new)
    if edited and (gone or extra):
        said = [f"names {_which(gone, 'not on disk')}"] if gone else []
        said += [f"does not name {_which(extra, '' if gone else 'on disk')}"] if extra else []
        same = "; ".join(f"{disk} has the hash locked for {was}" for was, disk in moved.items())
        why = f" ({same})" if same else ""
        problems.append(
            f"{LOCKFILE} {', and '.join(said)}: the lock was edited or the files renamed{why}; "
            "re-lock once the anchors are right"
        )
        return problems
    problems += [
        f"anchor transcript {was} renamed {disk} since the lock" for was, disk in moved.items()
    ]
    problems += [f"anchor transcript {n} removed since the lock" for n in gone if n not in moved]
    taken = set(moved.values())
    problems += [f"anchor transcript {n} added since the lock" for n in extra if n not in taken]
    return problems


def lock_problems(anchors: AnchorSet) -> list[str]:
    """Every way the folder differs from its lock, in words; empty when it matches. When the
    lock itself was edited (its seal does not match), that is said first, and entries that
    differ are not blamed on the files. Hashes compare case and surrounding spaces aside."""
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
    if _hash(rubric.get("sha256")) != now["rubric"]["sha256"]:
        ours, theirs = _apart(now["rubric"]["sha256"], _hash(rubric.get("sha256")))
        problems.append(f"rubric {now['rubric']['id']} {since}: sha256 {ours} ≠ locked {theirs}")
    threshold = float(locked.get("threshold", THRESHOLD))
    if threshold < THRESHOLD and locked.get("lowered") is not True:
        problems.append(
            f"{LOCKFILE} sets threshold {threshold:g}, below the seed's {THRESHOLD:g}, without "
            "saying it was lowered on purpose: re-lock with --allow-lower-threshold, or at "
            f"{THRESHOLD:g}"
        )
    if _hash(locked.get("gold")) != now["gold"]:
        problems.append(f"gold scores {GOLD} {since}")
    old: dict[str, Any] = _mapping(locked.get("transcripts"))
    problems += _transcript_problems(old, now["transcripts"], edited)
    return problems + _shown_problems(locked, now["shown"], since)


def _shown_problems(
    locked: dict[str, Any], now: dict[str, dict[str, str]], since: str
) -> list[str]:
    """Anchors whose scenario's reference answer, terms or citations differ from the lock, one
    line each. An anchor the lock does not know is a transcript added (or the lock edited),
    said already."""
    if "shown" not in locked:
        return [
            f"{LOCKFILE} seals nothing of what the judge is shown from the anchors' scenarios "
            "(reference answers, terms; a lock from before they were locked): re-lock once "
            "they are right"
        ]
    old = _mapping(locked["shown"])
    problems = []
    for anchor, hashes in sorted(now.items()):
        was = _mapping(old.get(anchor))
        if not was:
            continue
        scenario = hashes["scenario"]
        if was.get("scenario") != scenario:
            problems.append(
                f"{anchor} is judged with scenario {scenario}'s reference answer and terms, "
                f"the lock with scenario {was.get('scenario')}'s"
            )
            continue
        changed = [
            words
            for field, words in SHOWN_FROM_SPEC.items()
            if _hash(was.get(field)) != hashes[field]
        ]
        if changed:
            problems.append(
                f"scenario {scenario}'s {_listed(changed)} {since} (shown to the judge with "
                f"{anchor})"
            )
    return problems
