"""Loading a suite or a sweep raises SpecError (file and field named) or nothing at all.

Example tests name each crash that was found; property tests feed the loaders YAML built from
realistic-shaped specs with wrong values, and character-level mutations of real files.
"""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_farm.scenarios import (
    load_suite,
    suite_path,
)
from mcp_farm.scenarios.validate import check_file
from mcp_farm.scheduler.submission.expand import (
    expand,
    load_sweep,
)
from mcp_farm.schema import (
    SpecError,
    Suite,
)

FUZZ = settings(
    # 300 new examples a run, drawn afresh each time (no example database): across runs the
    # loaders see as many as 1,000 a run gave, at a third of the test run's time (these four
    # were the suite's slowest tests, about 4 minutes of a lane's CPU).
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
ROOT = Path(__file__).resolve().parents[2]
BASIC = suite_path("basic").read_text(encoding="utf-8")
QUICKSTART = (ROOT / "scenarios" / "sweeps" / "quickstart.yaml").read_text(encoding="utf-8")
FIRST = yaml.safe_load(BASIC)["scenarios"][0]
_names = itertools.count()


def _write(folder: Path, content: str | bytes) -> Path:
    # A new name each time: the suite cache is keyed on path and modification time, and two
    # writes within one clock tick would look like the same file.
    path = folder / f"spec-{next(_names)}.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
    return path


def _suite_with(tmp_path: Path, **changes: Any) -> Path:
    scenario = {**FIRST, **changes}
    return _write(tmp_path, yaml.safe_dump({"suite": "x", "scenarios": [scenario]}))


def _load_error(path: Path) -> str:
    with pytest.raises(SpecError) as caught:
        load_suite(str(path))
    return str(caught.value)


# --- the crashes found, one sentence each ---------------------------------------------------


def test_an_invalid_regex_matcher_fails_the_load_naming_file_and_field(tmp_path: Path) -> None:
    path = _suite_with(
        tmp_path, expect=[{"tool": "list_directory", "params": {"path": {"regex": "([a-z]"}}}]
    )
    assert _load_error(path) == (
        f"{path}: scenarios[0].expect[0].params.path.regex: invalid regular expression: "
        "missing ), unterminated subpattern at position 0 (got '([a-z]')"
    )


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": 12}, "invalid JSON schema: 12 is not valid under any of the given schemas"),
        ({"pattern": "([a-z"}, "is not a 'regex'"),
        ({"$ref": "#/nowhere"}, "unresolvable $ref"),
        ({"$ref": "#"}, "refers to itself without end"),
        ({"$schema": "my-own-draft"}, "unknown $schema"),
        ({"pattern": "a{99999999999}"}, "repetition number is too large"),
        # jsonschema matches these names with `re` for `unevaluatedProperties`: no budget.
        (
            {"patternProperties": {"(a|aa)+$": {}}, "unevaluatedProperties": False},
            "`unevaluatedProperties` with `patternProperties` is not supported",
        ),
        (
            {"$defs": {"x": {"patternProperties": {"^a": {}}}}, "unevaluatedProperties": {}},
            "`unevaluatedProperties` with `patternProperties` is not supported",
        ),
    ],
)
def test_an_invalid_json_schema_matcher_fails_the_load(
    tmp_path: Path, schema: dict[str, Any], problem: str
) -> None:
    params = {"path": {"json_schema": schema}}
    path = _suite_with(tmp_path, expect=[{"tool": "list_directory", "params": params}])
    message = _load_error(path)
    assert message.startswith(f"{path}: scenarios[0].expect[0].params.path.json_schema: ")
    assert problem in message


@pytest.mark.parametrize("pattern", ["([a-z", "a{4294967296}", "(" * 5000 + ")" * 5000, "\\"])
def test_an_invalid_final_answer_pattern_fails_the_load(tmp_path: Path, pattern: str) -> None:
    path = _suite_with(tmp_path, final_answer=pattern)
    assert f"{path}: scenarios[0].final_answer: invalid regular expression" in _load_error(path)


def test_validate_lists_an_invalid_pattern_as_a_problem(tmp_path: Path) -> None:
    path = _suite_with(tmp_path, final_answer="([a-z")
    suite, problems = check_file(path)
    assert suite is None
    assert [p.field for p in problems] == ["scenarios[0].final_answer"]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"suite: \xff\xfe", "not UTF-8 text"),
        ("suite: x\nwhen: 2024-13-01\n", "invalid YAML value: month must be in 1..12"),
        ("suite: " + "9" * 5000, "invalid YAML value: Exceeds the limit"),
        ("[" * 10_000, "nested too deeply"),
        ("suite: &s [*s]", "suite[0]: a value that contains itself"),
        ('suite: "\\ud800"', "suite: text with a lone surrogate"),
        ("suite: !!binary aGk=", "suite: a bytes value"),
        ("suite: x\nscenarios: [{1: 2}]", "scenarios[0]: the key 1 is not text"),
    ],
)
def test_yaml_that_the_parser_cannot_turn_into_plain_data_is_a_spec_error(
    tmp_path: Path, content: str | bytes, problem: str
) -> None:
    path = _write(tmp_path, content)
    message = _load_error(path)
    assert message.startswith(str(path)) and problem in message


@pytest.mark.parametrize("name", ["bad\x00name", "x" * 400, "x" * 400 + ".yaml", "/"])
def test_a_suite_name_the_os_cannot_open_is_a_spec_error(name: str) -> None:
    with pytest.raises(SpecError):
        load_suite(name)


def test_a_sweep_naming_a_prompt_the_os_cannot_open_is_a_spec_error(tmp_path: Path) -> None:
    sweep = yaml.safe_load(QUICKSTART) | {"prompts": ["p" * 400]}
    with pytest.raises(SpecError, match="prompts"):
        expand(load_sweep(_write(tmp_path, yaml.safe_dump(sweep))), "sweep")


def test_a_rubric_name_the_os_cannot_open_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = _suite_with(tmp_path, answer={"rubric": "r" * 400})
    assert "unknown rubric" in _load_error(path)


# --- properties: only SpecError escapes, whatever the file holds ----------------------------

ODD_TEXT = st.text(
    alphabet=st.one_of(st.characters(), st.sampled_from(["\x00", "\\", ":", "[", "{", "&", "*"])),
    max_size=20,
)
ODD_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        ODD_TEXT,
        st.sampled_from(["([a-z", "a{99999999999}", "simple", "basic", "native", "gaia", "/"]),
    ),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(ODD_TEXT, inner, max_size=2),
    max_leaves=4,
)
MATCHERS = st.one_of(
    ODD_VALUES,
    st.dictionaries(
        st.sampled_from(
            [
                "exact",
                "regex",
                "json_schema",
                "number",
                "tolerance",
                "one_of",
                "path",
                "any",
                "derived_from_step",
                "optional",
                "items",
                "contains",
                "keys",
                "extra_keys",
            ]
        ),
        st.one_of(
            ODD_VALUES,
            st.sampled_from([{"type": 12}, {"$ref": "#"}, {"type": "string"}, "([a-z", 0]),
            # Nested matchers, some broken deep inside (a bad pattern, a forward chain).
            st.sampled_from(
                [
                    {"regex": "([a-z"},
                    [{"keys": {"k": {"regex": "([a-z"}}}],
                    {"optional": {"derived_from_step": 5}},
                    {"k": {"optional": 1}},
                    "allow",
                ]
            ),
        ),
        max_size=2,
    ),
)
SCENARIOS = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.just("a"), ODD_VALUES),
        "version": st.one_of(st.just(1), ODD_VALUES),
        "tier": st.one_of(st.just("simple"), ODD_VALUES),
        "prompt": st.one_of(st.just("hi"), ODD_VALUES),
        "servers": st.one_of(st.just(["gaia"]), ODD_VALUES),
        "expect": st.lists(
            st.fixed_dictionaries(
                {"tool": st.one_of(st.just("t"), ODD_VALUES)},
                optional={"params": st.dictionaries(ODD_TEXT, MATCHERS, max_size=2)},
            ),
            max_size=2,
        ),
        "final_answer": ODD_VALUES,
        "answer": st.one_of(ODD_VALUES, st.fixed_dictionaries({"rubric": ODD_VALUES})),
        "open_tools": ODD_VALUES,
        "max_turns": ODD_VALUES,
    },
)
# A real scenario with one field (or one matcher) replaced: these get past the first checks
# and reach the pattern, schema and structural ones.
NEAR_REAL = st.one_of(
    st.builds(
        lambda key, value: {**FIRST, key: value},
        st.sampled_from([*FIRST, "answer", "open_tools", "order", "allowed_extra"]),
        st.one_of(
            ODD_VALUES,
            st.just([{"tool": "t", "params": {"p": {"derived_from_step": 0}}}]),
            st.just([{"tool": {"one_of": ["t", "t"]}}, {"tool": "u", "after": [3]}]),
        ),
    ),
    st.builds(
        lambda matcher: {**FIRST, "expect": [{"tool": "list_directory", "params": {"p": matcher}}]},
        MATCHERS,
    ),
)
SUITES = st.one_of(
    # Odd scenarios in an otherwise plain suite (reaches the scenario checks) ...
    st.fixed_dictionaries(
        {"suite": st.just("x"), "scenarios": st.lists(st.one_of(SCENARIOS, NEAR_REAL), max_size=2)}
    ),
    # ... or odd suite-level fields.
    st.fixed_dictionaries(
        {"suite": ODD_VALUES, "scenarios": st.lists(NEAR_REAL, max_size=1)},
        optional={
            "servers": ODD_VALUES,
            "toolsets": ODD_VALUES,
            "repo": st.one_of(
                ODD_VALUES, st.fixed_dictionaries({"fixture": ODD_TEXT, "commit": ODD_TEXT})
            ),
            "rubric": ODD_VALUES,
        },
    ),
)


def _mutated(text: str) -> st.SearchStrategy[str]:
    """The text with a few characters replaced, inserted or deleted, or lines dropped."""

    def apply(edits: list[tuple[str, int, str]]) -> str:
        out = text
        for kind, at, chars in edits:
            at %= max(len(out), 1)
            if kind == "replace":
                out = out[:at] + chars + out[at + len(chars) :]
            elif kind == "insert":
                out = out[:at] + chars + out[at:]
            elif kind == "delete":
                out = out[:at] + out[at + len(chars) + 1 :]
            else:
                lines = out.splitlines()
                out = "\n".join(lines[: at % len(lines)] + lines[at % len(lines) + 1 :])
        return out

    edit = st.tuples(
        st.sampled_from(["replace", "insert", "delete", "drop-line"]),
        st.integers(min_value=0),
        st.one_of(
            ODD_TEXT,
            st.sampled_from(["- ", ": ", "{", "]", "&a ", "*a", "!!binary ", "2024-13-01", "\t"]),
        ),
    )
    return st.lists(edit, min_size=1, max_size=4).map(apply)


def _load_or_spec_error(path: Path) -> None:
    with contextlib.suppress(SpecError):
        assert isinstance(load_suite(str(path)), Suite)
    suite, problems = check_file(path)
    assert suite is not None or problems
    assert all(isinstance(p, SpecError) for p in problems)


@FUZZ
@given(SUITES)
def test_any_suite_shaped_yaml_loads_or_raises_a_spec_error(tmp_path: Path, data: Any) -> None:
    _load_or_spec_error(_write(tmp_path, yaml.safe_dump(data, allow_unicode=True)))


@FUZZ
@given(_mutated(BASIC[:1500]))
def test_any_mutation_of_a_real_suite_loads_or_raises_a_spec_error(
    tmp_path: Path, text: str
) -> None:
    _load_or_spec_error(_write(tmp_path, text))


PLAIN_MODEL = {"id": "m", "adapter": "scripted", "model": "script", "script": [{"answer": "x"}]}
PLAIN_SWEEP: dict[str, Any] = {
    "name": "s",
    "models": [PLAIN_MODEL],
    "prompts": ["native"],
    "scenarios": {"suites": ["basic"], "ids": ["fs.list-desktop"]},
    "repetitions": 1,
}
MODEL_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "id": ODD_VALUES,
    "adapter": st.one_of(st.sampled_from(["scripted", "openai", "local"]), ODD_VALUES),
    "model": st.one_of(st.sampled_from(["script", "gemma3-270m", "x.gguf"]), ODD_VALUES),
    "endpoint": st.one_of(st.just("http://127.0.0.1:9/v1"), ODD_VALUES),
    "script": st.lists(st.dictionaries(ODD_TEXT, ODD_VALUES, max_size=2), max_size=2),
    "pins": ODD_VALUES,
    "hardware": ODD_VALUES,
    "api_key_env": ODD_VALUES,
}
SELECTION_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "suites": st.lists(
        st.one_of(st.sampled_from(["basic", "code", "a\x00b", "x" * 300, "/", "x.yaml"]), ODD_TEXT),
        max_size=2,
    ),
    "ids": st.lists(st.one_of(st.just("fs.list-desktop"), ODD_TEXT), max_size=2),
    "tiers": ODD_VALUES,
    "tags": ODD_VALUES,
}
SWEEP_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "name": ODD_VALUES,
    "prompts": st.one_of(
        st.lists(st.sampled_from(["native", "json", "nope", "x" * 300, "../suites/basic"])),
        ODD_VALUES,
    ),
    "repetitions": st.one_of(st.integers(-2, 3), ODD_VALUES),
    "paraphrases": st.one_of(st.sampled_from(["all", "rotate", "verbatim"]), ODD_VALUES),
    "toolsets": st.one_of(
        ODD_VALUES, st.lists(st.one_of(st.just("x"), st.dictionaries(ODD_TEXT, ODD_VALUES)))
    ),
    "judge": st.one_of(ODD_VALUES, st.fixed_dictionaries({}, optional={"model": ODD_VALUES})),
    "gates": st.one_of(
        ODD_VALUES, st.lists(st.dictionaries(st.sampled_from(["metric", "min", "per"]), ODD_VALUES))
    ),
    "seed": ODD_VALUES,
}


def _replace(base: dict[str, Any], fields: dict[str, st.SearchStrategy[Any]]) -> Any:
    """`base` with one to three of `fields` replaced by drawn values."""
    chosen = st.lists(st.sampled_from(sorted(fields)), min_size=1, max_size=3, unique=True)
    return chosen.flatmap(
        lambda keys: st.fixed_dictionaries({k: fields[k] for k in keys}).map(
            lambda drawn: {**base, **drawn}
        )
    )


# The plain sweep with odd values in its own fields, in its model, or in its selection.
SWEEPS = st.one_of(
    _replace(PLAIN_SWEEP, SWEEP_FIELDS),
    _replace(PLAIN_MODEL, MODEL_FIELDS).map(lambda model: {**PLAIN_SWEEP, "models": [model]}),
    _replace(PLAIN_SWEEP["scenarios"], SELECTION_FIELDS).map(
        lambda selection: {**PLAIN_SWEEP, "scenarios": selection}
    ),
    st.dictionaries(ODD_TEXT, ODD_VALUES, max_size=3),
)


def _sweep_or_spec_error(path: Path) -> None:
    try:
        sweep = load_sweep(path)
        # A large matrix is valid, only slow to expand: the property is about errors.
        if sweep.repetitions * len(sweep.models) * len(sweep.prompts) <= 50:
            expand(sweep, str(path))
    except SpecError:
        pass


@FUZZ
@given(SWEEPS)
def test_any_sweep_shaped_yaml_loads_or_raises_a_spec_error(tmp_path: Path, data: Any) -> None:
    _sweep_or_spec_error(_write(tmp_path, yaml.safe_dump(data, allow_unicode=True)))


@FUZZ
@given(_mutated(QUICKSTART))
def test_any_mutation_of_a_real_sweep_loads_or_raises_a_spec_error(
    tmp_path: Path, text: str
) -> None:
    _sweep_or_spec_error(_write(tmp_path, text))
