"""Check suite files and report every problem at once (`farm scenarios validate`).

Loading a suite for a sweep stops at the first error; a person fixing a file wants all of them:
schema errors, duplicate ids, unknown servers, chained arguments that point forward, examples
that do not match their own answer pattern, and tools never given an example.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from scenarios.catalog import SUITES_DIR, structural_problems
from schema import SpecError, Suite, read_yaml, spec_errors


def suite_files(paths: Iterable[Path]) -> list[Path]:
    """The YAML files named, or found under the folders named; the bundled suites by default."""
    given = list(paths) or [SUITES_DIR]
    found: list[Path] = []
    for path in given:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.y*ml") if p.suffix in (".yaml", ".yml"))
        else:
            found.append(path)
    return found


def _lint_problems(suite: Suite, source: str) -> list[SpecError]:
    """What a suite can run with but should not ship with (the self-checks rely on these)."""
    problems: list[SpecError] = []
    for i, scenario in enumerate(suite.scenarios):
        where = f"scenarios[{i}]"
        for j, call in enumerate(scenario.expect):
            if call.example is None:
                problems.append(
                    SpecError(
                        source,
                        f"{where}.expect[{j}].example",
                        "missing: the self-checks replay it as the ideal agent's call",
                    )
                )
        if scenario.final_answer:
            try:
                pattern = re.compile(scenario.final_answer, re.IGNORECASE)
            except re.error as exc:
                problems.append(SpecError(source, f"{where}.final_answer", f"invalid regex: {exc}"))
                continue
            if scenario.example_answer is None:
                problems.append(SpecError(source, f"{where}.example_answer", "missing"))
            elif not pattern.search(scenario.example_answer):
                problems.append(
                    SpecError(
                        source,
                        f"{where}.example_answer",
                        f"does not match final_answer /{scenario.final_answer}/",
                    )
                )
        wordings = [scenario.prompt, *scenario.paraphrases]
        if len({w.strip().lower() for w in wordings}) < len(wordings):
            problems.append(
                SpecError(source, f"{where}.paraphrases", "repeats the prompt or each other")
            )
    return problems


def check_file(path: Path) -> tuple[Suite | None, list[SpecError]]:
    """The parsed suite (None if it does not parse) and every problem found in it."""
    source = str(path)
    try:
        data = read_yaml(path)
    except SpecError as exc:
        return None, [exc]
    if not isinstance(data, dict):
        return None, [SpecError(source, "", "expected a mapping at the top")]
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        return None, spec_errors(exc, source)
    return suite, structural_problems(suite, source) + _lint_problems(suite, source)
