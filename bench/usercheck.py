"""How well the simulated user's per-message check finds each kind of user error, measured on
a labelled set of user messages (tests/workers/usersim/data/user_messages.yaml).

    .venv/bin/python -m bench.usercheck [--misses]

Each message is checked as a trial checks it (`check_message` as it arrives, the stop judged as
at grading: `judge_stop`), and the kinds found are compared with the kinds labelled: per kind,
precision (of the messages flagged with it, the share labelled with it) and recall (of the
messages labelled with it, the share flagged), and the same for `compliant` (no error at all).
Deterministic and quick (well under a second's checking); `--misses` lists every disagreement.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from mcp_farm.scenarios import find_scenario
from mcp_farm.schema import STOP_MARKER, Message, Scenario, UserCard, UserIdentity, UserSimRecord
from mcp_farm.workers.grading.grade import Graded
from mcp_farm.workers.usersim.check import check_message
from mcp_farm.workers.usersim.grade import judge_stop
from mcp_farm.workers.usersim.loop import SPEAKER

DATA = Path(__file__).resolve().parent.parent / "tests/workers/usersim/data/user_messages.yaml"
KINDS = ("invented", "volunteered", "off_script", "left_early", "compliant")


@dataclass
class Case:
    card: UserCard
    scenario: Scenario | None
    agent: str
    user: str
    errors: frozenset[str]
    reached: bool | None = None
    """For a stop: whether the outcome the user came for had been reached."""


def load(path: Path = DATA) -> list[Case]:
    """The labelled messages, each with its card (and scenario, for a bundled card)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    cards: dict[str, tuple[UserCard, Scenario | None]] = {}
    for alias, spec in data["cards"].items():
        if "scenario" in spec:
            scenario = find_scenario("usersim", spec["scenario"])
            assert scenario.user_sim is not None
            cards[alias] = (scenario.user_sim, scenario)
        else:
            cards[alias] = (UserCard.model_validate(spec), None)
    cases = []
    for raw in data["cases"]:
        card, owner = cards[raw["card"]]
        errors = frozenset(raw["errors"])
        cases.append(Case(card, owner, raw["agent"], raw["user"], errors, raw.get("reached")))
    return cases


def found(case: Case) -> frozenset[str]:
    """The kinds of user error the farm finds in the case's message, as a trial finds them:
    the message checked as it arrives, and a stop judged when the trial is graded."""
    said = [("user", case.card.opening), ("agent", case.agent)]
    raw = SPEAKER.sub("", case.user).strip()
    stop = STOP_MARKER in raw
    text = raw.split(STOP_MARKER)[0].strip()
    record = UserSimRecord(
        identity=UserIdentity(
            model_id="labelled", model_key="", temperature=0.0, seed=0, guideline="v1"
        )
    )
    record.messages = index = 1  # the message after the opening
    if text or not stop:
        record.errors += check_message(case.card, said, text, index, parting=stop)
    if stop or not text:
        assert case.scenario is not None and case.reached is not None, case.user
        record.ended = "user_stop"
        transcript = [
            Message(role="user", content=case.card.opening),
            Message(role="assistant", content=case.agent),
        ]
        if text:
            transcript.append(Message(role="user", content=text))
        graded = Graded("pass", "") if case.reached else Graded("output_mismatch", "not reached")
        judge_stop(case.scenario, graded, record, [], transcript, {})
    return frozenset(e.kind for e in record.errors)


@dataclass
class Score:
    flagged: int = 0
    labelled: int = 0
    both: int = 0

    @property
    def precision(self) -> float:
        return self.both / self.flagged if self.flagged else 1.0

    @property
    def recall(self) -> float:
        return self.both / self.labelled if self.labelled else 1.0


def measure(cases: list[Case]) -> tuple[dict[str, Score], list[tuple[Case, frozenset[str]]]]:
    """Per kind (and `compliant`), how many messages were flagged, labelled, and both; and
    the cases where the check and the label disagree."""
    scores = {kind: Score() for kind in KINDS}
    misses = []
    for case in cases:
        got = found(case)
        for kind in KINDS:
            want = case.errors if kind != "compliant" else frozenset()
            if kind == "compliant":
                flagged, labelled = not got, not case.errors
            else:
                flagged, labelled = kind in got, kind in want
            scores[kind].flagged += flagged
            scores[kind].labelled += labelled
            scores[kind].both += flagged and labelled
        if got != case.errors:
            misses.append((case, got))
    return scores, misses


def table(scores: dict[str, Score], total: int) -> Table:
    out = Table(title=f"the user check on {total} labelled messages")
    for head in ("kind", "labelled", "flagged", "precision", "recall"):
        out.add_column(head, justify="left" if head == "kind" else "right")
    for kind, s in scores.items():
        out.add_row(kind, str(s.labelled), str(s.flagged), f"{s.precision:.1%}", f"{s.recall:.1%}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list every disagreement")
    args = parser.parse_args(argv)
    console = Console()
    cases = load()
    scores, misses = measure(cases)
    console.print(table(scores, len(cases)))
    if args.misses:
        for case, got in misses:
            line = {"agent": case.agent, "user": case.user}
            console.print(
                f"labelled {sorted(case.errors)} found {sorted(got)}: {line}", markup=False
            )


if __name__ == "__main__":
    main()
